/**
 * A roster of values held while something runs (open streams, say): added and removed in constant
 * time, listed when all must be told something at once.
 *
 * Why not a Set: V8 rebuilds a Set's table as it grows and shrinks, and the table it leaves behind
 * keeps pointing at what it held. Once that table is in the old generation, the young generation's
 * collections take its pointers as live (they do not look at whether the table itself is), so
 * whatever a request put in the Set, and everything that reaches, is copied there too. With a Set of
 * each request's response, every 1 KB request's objects were promoted (bench/what-is-left.md,
 * "Issue 26's eleventh round"). Here each value has a node of its own, and a node taken out of the
 * roster lets go of its value and its neighbours at once.
 */

interface RosterNode<T> {
  value: T | undefined;
  prev: RosterNode<T> | undefined;
  next: RosterNode<T> | undefined;
}

export interface Roster<T> {
  /** Adds `value`; the function returned takes it out again (later calls do nothing). */
  add(value: T): () => void;
  /** How many values it holds. */
  readonly size: number;
  /** The values held, oldest first: a copy, so what is called with them may take them out. */
  values(): T[];
}

export function createRoster<T>(): Roster<T> {
  let first: RosterNode<T> | undefined;
  let last: RosterNode<T> | undefined;
  let size = 0;
  return {
    add(value) {
      const node: RosterNode<T> = { value, prev: last, next: undefined };
      if (last === undefined) first = node;
      else last.next = node;
      last = node;
      size++;
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        if (node.prev === undefined) first = node.next;
        else node.prev.next = node.next;
        if (node.next === undefined) last = node.prev;
        else node.next.prev = node.prev;
        node.value = undefined;
        node.prev = undefined;
        node.next = undefined;
        size--;
      };
    },
    get size() {
      return size;
    },
    values() {
      const out: T[] = [];
      for (let node = first; node !== undefined; node = node.next) out.push(node.value as T);
      return out;
    },
  };
}
