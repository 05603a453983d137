/**
 * Writes held to the end of the event loop's turn, then sent together (issue 26's twelfth round).
 *
 * A write to a loopback socket runs the reader's side of TCP in the writer's system call and wakes
 * the reader. Waking a process that is asleep is most of that call's cost on a virtual machine
 * (`perf` on the bench: 11 of the bare proxy's and 26 of llmux's µs a 1 KB request went to it,
 * `sock_def_readable` down to the scheduler), and waking one already running costs next to
 * nothing. Each request's upstream call and its answer were written as soon as they were ready,
 * one request's work apart, so the upstream and the client had often gone back to sleep between
 * two writes. Held to the turn's end, the writes of every request handled in the turn go out back
 * to back: the first wakes its reader, the rest mostly find it awake. A held write waits for the
 * rest of its turn's callbacks: a lone request's, only for what its own code does after the write
 * in that turn (one connection's p50 through the bench's upstream stayed within the machine's
 * noise: 349-454 µs against 358-435 before, three runs each).
 *
 * A socket is corked now and uncorked in a `setImmediate` (after the turn's I/O callbacks and
 * their promises); Node counts corks, so a cork of its own taken meanwhile is kept. A socket
 * destroyed meanwhile is left alone: its writes failed with it.
 *
 * An HTTP answer cannot be held that way: `ServerResponse.end` uncorks its socket fully, whatever
 * was corked before (Node's "Fully uncork connection on end()"), so a JSON answer corked here went
 * out at once, in the middle of the turn. Its `end` itself waits for the turn's end instead
 * ({@link endAtTurnEnd}): its head is set (`headersSent` is true) at once, its bytes leave
 * with the turn's others (issue 26's fourteenth round: a 1 KB JSON request then cost about a fifth
 * less CPU, `bench/pair.ts` 0.81 and 1.21 the other way round).
 *
 * Used for upstream calls (src/providers/http1.ts), JSON answers (src/http/respond.ts) and the
 * state server's commands (src/state/resp-link.ts, where a turn's commands then leave in one
 * write). Streams are not held: each event is sent as it comes.
 */

/** What is used of a `net.Socket`. */
export interface CorkableSocket {
  cork(): void;
  uncork(): void;
  readonly destroyed: boolean;
}

/** What is used of an `http.ServerResponse`. */
export interface EndableResponse {
  end(body: string | Buffer): unknown;
  destroy(err?: Error): unknown;
  readonly writableEnded: boolean;
}

let held: CorkableSocket[] = [];
/** Answers to end at the turn's end: a response, then its body, flat (no object a pair). */
let ends: (EndableResponse | string | Buffer)[] = [];
let scheduled = false;

function sendHeld(): void {
  scheduled = false;
  const ending = ends;
  ends = [];
  for (let i = 0; i < ending.length; i += 2) {
    const res = ending[i] as EndableResponse;
    if (res.writableEnded) continue;
    // Thrown here, it would stop the turn's other writes and the process: the answer is cut instead.
    try {
      res.end(ending[i + 1] as string | Buffer);
    } catch (err) {
      res.destroy(err instanceof Error ? err : new Error(String(err)));
    }
  }
  const sockets = held;
  held = [];
  for (let i = 0; i < sockets.length; i++) {
    const socket = sockets[i] as CorkableSocket;
    if (!socket.destroyed) socket.uncork();
  }
}

/**
 * Holds what is written to `socket` from now until the end of this turn of the event loop. Call
 * it before the writes; each call uncorks once.
 */
export function holdToTurnEnd(socket: CorkableSocket): void {
  socket.cork();
  held.push(socket);
  scheduleSend();
}

/**
 * Ends `res` with `body` at the end of this turn of the event loop, with the turn's other writes
 * (a response ended meanwhile is left alone). Its head should be written already.
 */
export function endAtTurnEnd(res: EndableResponse, body: string | Buffer): void {
  ends.push(res, body);
  scheduleSend();
}

/** Whether `res` waits for the turn's end to be ended ({@link endAtTurnEnd}): it is as good as ended. */
export function endPending(res: EndableResponse): boolean {
  for (let i = 0; i < ends.length; i += 2) if (ends[i] === res) return true;
  return false;
}

function scheduleSend(): void {
  if (!scheduled) {
    scheduled = true;
    setImmediate(sendHeld);
  }
}
