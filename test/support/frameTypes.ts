/**
 * A hand-driven Router's client as its frame types: a connection whose
 * writer's first write never completes (so what follows stays in its
 * outbox), recording that write's frame types, and `written`, which takes
 * what the writer took and would take now. Used where a test reads only
 * which frames a session was written, in order (ask-settle,
 * ask-settle-parked-reply, ask-expiry-late-edge); `typedSessions` registers
 * such clients on a hand-driven Router.
 */
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { registerFrame } from "./broker.ts"
import { fakeConnection } from "./fakeConnection.ts"
import type { HandRouter } from "./handRouter.ts"

/** A connected session: its peer and the frame types its writer took so far. */
export interface TypedClient {
  readonly peer: Peer
  readonly log: Array<string>
}

/** A frame's `type`. */
export const typeOf = (frame: OutFrame): string => {
  const parsed: { type: string } = JSON.parse(frameText(frame))
  return parsed.type
}

/**
 * A connection whose writer's first write never completes (so what follows stays in its outbox, for
 * `written` to take), recording the frame types of that write in `log`.
 */
export const recording = (id: number, log: Array<string>): Connection => ({
  ...fakeConnection(id, true),
  write: (frames) => {
    for (const frame of frames) log.push(typeOf(frame))
    return Effect.never
  }
})

/** The frame types `client`'s writer has taken and would take now, in order, since the last call. */
export const written = (router: Router, client: TypedClient): Array<string> => {
  const seen = [...client.log, ...router.output.writes.takeForWrite(client.peer).frames.map(typeOf)]
  client.log.length = 0
  return seen
}

/**
 * `session(sessionId, features)`: a `recording` connection attached to a
 * hand-driven Router (numbered from 1 in the order of the calls) and
 * registered as `sessionId`, asking for `features`.
 */
export const typedSessions = (router: Pick<HandRouter, "attach" | "batch">) => {
  let connections = 0
  return (sessionId: string, features: ReadonlyArray<string>): TypedClient => {
    const log: Array<string> = []
    const peer = router.attach(recording(++connections, log))
    router.batch(peer, [registerFrame({ sessionId, frame: { features: [...features] } })])
    return { peer, log }
  }
}
