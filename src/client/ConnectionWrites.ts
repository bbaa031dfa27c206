/**
 * One client connection's write side as its parts use it: whether the
 * connection is still open, and the writes that go through its outbox
 * (Outbox.ts), in order. It owns the `open` flag — true from the handshake
 * until the close (`shut`) — so that a write, a send or a `postLater` after
 * the close fails with `ConnectionLost` (or queues nothing) rather than
 * waiting on a socket that is gone, and `shut` drops what is still queued
 * before the close fails what waits for an answer. Owned by one
 * `ClientConnection`; touched only synchronously.
 */
import { Effect } from "effect"
import type { Connection } from "../transport/Connection.ts"
import { ConnectionLost } from "./errors.ts"
import { Outbox } from "./Outbox.ts"

/** The write side of one connection; see the module header. */
export class ConnectionWrites {
  /** Every frame goes through the outbox, in order; the frames of one turn go out in one write (Outbox.ts). */
  readonly outbox: Outbox
  private isOpen = true

  constructor(connection: Connection) {
    this.outbox = new Outbox(connection)
  }

  /** True until the connection closes (`shut`). */
  get open(): boolean {
    return this.isOpen
  }

  /** Writes `texts` as one batch, in order (the caller checked the connection is open). */
  writeTexts(texts: ReadonlyArray<string>, operation: string): Effect.Effect<void, ConnectionLost> {
    return this.outbox.write(texts, operation)
  }

  /**
   * Writes one frame's text, or fails with `ConnectionLost` once the connection closed; `takenBack` is told
   * when the outbox takes the frame back unwritten (Outbox.ts).
   */
  writeText(text: string, operation: string, takenBack?: () => void): Effect.Effect<void, ConnectionLost> {
    return Effect.suspend(() =>
      this.isOpen ? this.outbox.write([text], operation, takenBack) : Effect.fail(new ConnectionLost({ operation }))
    )
  }

  /** Writes `frame` as JSON, as `writeText` does. */
  write(frame: object, operation: string): Effect.Effect<void, ConnectionLost> {
    return Effect.suspend(() => this.writeText(JSON.stringify(frame), operation))
  }

  /** Queues `frame` behind everything queued before it and returns at once: false when closed and nothing was queued. */
  postLater(frame: object): boolean {
    return this.isOpen && this.outbox.post([JSON.stringify(frame)])
  }

  /** The connection closed: nothing more is written, and what is still queued is never written, its writers told so. */
  shut(): void {
    this.isOpen = false
    this.outbox.drop()
  }
}
