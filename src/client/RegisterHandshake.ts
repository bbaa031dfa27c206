/**
 * The register handshake of one client connection: what a session asks for
 * (`RegisterRequest`), the `register` frame built from it — with every
 * extension this client implements itself — and the broker's first answer
 * read back as `registered` or as the reason it was refused
 * (`IntercomNotConnected`). It owns no state: `openClientConnection`
 * (ClientConnection.ts) runs it once, on a freshly dialled connection,
 * before anything else is written or read there.
 */
import { Duration, Effect } from "effect"
import { decodeBrokerFrameText, isFrameDecodeError } from "../protocol/decode.ts"
import {
  EXTENSION_FEATURES,
  OBSERVE_V1,
  SESSION_HELD,
  SESSION_NOT_RELEASED,
  SESSION_RELEASED_RECENTLY
} from "../protocol/features.ts"
import type { RegisteredFrame, SessionRegistration } from "../protocol/frames.ts"
import type { Connection } from "../transport/Connection.ts"
import type { Dialer } from "./Dialer.ts"
import { IntercomNotConnected } from "./errors.ts"

/** What `openClientConnection` needs to dial and register. */
export interface RegisterRequest {
  readonly socketPath: string
  readonly sessionId: string
  readonly scopeId: string | undefined
  /** The session's group (`groups-v1`); the default group when undefined. */
  readonly group?: string | undefined
  /** A short-lived session (`ephemeral-v1`): forgotten by the broker when it leaves. */
  readonly ephemeral?: boolean | undefined
  readonly session: SessionRegistration
  readonly features: ReadonlyArray<string>
  /** `supervisor-v1`: a supervisor's owner token, and a child's capability and supervisor (C-SUP-8, C-SUP-9). */
  readonly supervisor?: SupervisorRegistration | undefined
  readonly connectTimeoutMs: number
  /** How to reach the broker; the Unix socket at `socketPath` by default (the simulation dials in memory). */
  readonly dial?: Dialer
  /**
   * Whether an earlier connection lost the send `messageId` (with this `signature`) unanswered, as of `now`
   * (Resending.ts `lostOnTheWay`): a write of it here is one after the loss (`PendingSend.afterLoss`). None by default.
   */
  readonly lostOnTheWay?: (messageId: string, signature: string, now: number) => boolean
  /**
   * `reclaim-v1`: register only if no live connection holds the id (taking it back after a takeover);
   * refused with an `IntercomNotConnected` whose `sessionHeld` is true otherwise.
   */
  readonly ifFree?: boolean | undefined
  /**
   * `reclaim-released-v1`: register only if the id is free and its last holder gave it up (`unregister`)
   * on this broker; refused with an `IntercomNotConnected` whose `sessionHeld` is true otherwise.
   */
  readonly ifReleased?: boolean | undefined
  /**
   * `rejoin-v1`: the client instance's id, the same on each of its connections (ignored by a broker
   * that does not grant `rejoin-v1`): its register while an older connection of its own still holds
   * the id is a rejoin, and the old connection's unconfirmed mail comes here first, in order.
   */
  readonly instanceId?: string | undefined
}

/** What a session brings to the supervisor channel when it registers (`supervisor-v1`). */
export interface SupervisorRegistration {
  /** A supervisor's private token: the broker signs the capabilities it issues to it with this. */
  readonly ownerToken?: string | undefined
  /** A child's grant: the capability its supervisor obtained for it, and that supervisor's session id. */
  readonly grant?: { readonly capability: string; readonly supervisorSessionId: string } | undefined
}

/** A connection the broker registered: its `registered` frame, and the frames read in the same batch after it. */
export interface Registered {
  readonly frame: RegisteredFrame
  readonly rest: ReadonlyArray<string>
}

/**
 * Extensions every connection asks for: all the protocol defines, since this
 * client implements each of them (handled by the connection, invisible to its
 * users) — except `observe-v1`, the broker's live view, which `ObserveClient`
 * (src/observe) asks for on a connection of its own. docs/client.md lists
 * them (test/docs/extension-lists.test.ts keeps the two the same).
 */
export const CLIENT_FEATURES: ReadonlyArray<string> = EXTENSION_FEATURES.filter((feature) => feature !== OBSERVE_V1)

/**
 * Writes `request`'s `register` on `connection` and reads the broker's first
 * answer, within `request.connectTimeoutMs`: `registered` (with what came in
 * its batch after it), or `IntercomNotConnected` saying why not — refused
 * (`sessionHeld` when the id is held or was not released), an error, a frame
 * out of turn, a closed or broken connection, or the timeout.
 */
export const register = (
  connection: Connection,
  request: RegisterRequest
): Effect.Effect<Registered, IntercomNotConnected> => {
  const register = {
    type: "register",
    sessionId: request.sessionId,
    session: request.session,
    ...(request.scopeId === undefined ? {} : { scopeId: request.scopeId }),
    ...(request.group === undefined ? {} : { group: request.group }),
    ...(request.ephemeral === true ? { ephemeral: true } : {}),
    ...(request.ifFree === true ? { ifFree: true } : {}),
    ...(request.ifReleased === true ? { ifReleased: true } : {}),
    ...(request.instanceId === undefined ? {} : { instanceId: request.instanceId }),
    ...(request.supervisor?.ownerToken === undefined ? {} : { ownerToken: request.supervisor.ownerToken }),
    ...(request.supervisor?.grant === undefined ? {} : request.supervisor.grant),
    // The extensions this client implements itself, plus what its owner asked for.
    features: [...new Set([...CLIENT_FEATURES, ...request.features])]
  }
  return Effect.gen(function*() {
    yield* connection.writeAll([JSON.stringify(register)])
    const first = yield* connection.read
    const frame = decodeBrokerFrameText(first[0] ?? "")
    if (isFrameDecodeError(frame)) return yield* new IntercomNotConnected({ reason: frame.message })
    if (frame.type === "error") return yield* new IntercomNotConnected({ reason: frame.error })
    if (frame.type === "registration_failed") {
      return yield* new IntercomNotConnected({
        reason: frame.reason,
        ...(frame.code === SESSION_HELD || frame.code === SESSION_NOT_RELEASED ? { sessionHeld: true } : {}),
        ...(frame.code === SESSION_RELEASED_RECENTLY ? { sessionHeld: true, releasedRecently: true } : {})
      })
    }
    if (frame.type !== "registered") {
      return yield* new IntercomNotConnected({ reason: `broker answered "${frame.type}" before "registered"` })
    }
    return { frame, rest: first.slice(1) }
  }).pipe(
    Effect.catchTag("ConnectionClosed", (error) => Effect.fail(new IntercomNotConnected({ reason: error.message }))),
    Effect.catchTag("FrameTooLarge", (error) => Effect.fail(new IntercomNotConnected({ reason: error.message }))),
    Effect.catchTag("InvalidUtf8", (error) => Effect.fail(new IntercomNotConnected({ reason: error.message }))),
    Effect.timeoutOrElse({
      duration: Duration.millis(request.connectTimeoutMs),
      orElse: () => Effect.fail(new IntercomNotConnected({ reason: "Connection timeout" }))
    })
  )
}
