/**
 * One connection's `authorize_supervisor` requests (`supervisor-v1`, C-SUP-8,
 * C-SUP-15): a supervisor asks the broker for a child's capability, or the
 * restore of one. It owns the requests waiting for their answer by
 * `requestId`: the reader hands each `supervisor_authorized` /
 * `supervisor_authorization_failed` here (`answer`), and the close fails every
 * one still waiting with `ConnectionLost` (`failAll`). Owned by one
 * `ClientConnection`; its table is touched only synchronously.
 */
import { Deferred, Effect, Exit } from "effect"
import { randomUUID } from "node:crypto"
import { SUPERVISOR_V1 } from "../protocol/features.ts"
import type { SupervisorAuthorizationFailedFrame, SupervisorAuthorizedFrame } from "../protocol/frames.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import type { ConnectionWrites } from "./ConnectionWrites.ts"
import { ConnectionLost, SupervisorAuthorizationFailed } from "./errors.ts"
import { SUPERVISOR_UNAVAILABLE, writeThenAwait } from "./requests.ts"

/**
 * The `authorize_supervisor` requests of one connection, as `makeAuthorizeRequests` makes them: the
 * connection's `authorize` (ClientConnection.ts), and what the reader and the close call.
 */
export interface AuthorizeRequests extends Pick<ClientConnection, "authorize"> {
  /** The broker's answer was read: settles the request waiting for it, if one still does. */
  readonly answer: (frame: SupervisorAuthorizedFrame | SupervisorAuthorizationFailedFrame) => void
  /** The connection closed: every request still waiting fails with `ConnectionLost`. */
  readonly failAll: () => void
}

/** The `authorize_supervisor` requests of a connection the broker granted `granted`, written through `writes`. */
export const makeAuthorizeRequests = (granted: ReadonlySet<string>, writes: ConnectionWrites): AuthorizeRequests => {
  const authorizations = new Map<
    string,
    { readonly childName: string; readonly answer: Deferred.Deferred<string, SupervisorAuthorizationFailed | ConnectionLost> }
  >()

  const authorize: AuthorizeRequests["authorize"] = (childName, capability, timeoutMs) =>
    Effect.suspend(() => {
      if (!granted.has(SUPERVISOR_V1)) {
        return Effect.fail(new SupervisorAuthorizationFailed({ childName, reason: SUPERVISOR_UNAVAILABLE }))
      }
      const requestId = randomUUID()
      const answer = Deferred.makeUnsafe<string, SupervisorAuthorizationFailed | ConnectionLost>()
      authorizations.set(requestId, { childName, answer })
      const frame = { type: "authorize_supervisor", requestId, childName, ...(capability === undefined ? {} : { capability }) }
      return writeThenAwait(writes.write(frame, "authorize"), answer, timeoutMs, "authorize", () => authorizations.delete(requestId)).pipe(
        Effect.onInterrupt(() => Effect.sync(() => authorizations.delete(requestId)))
      )
    })

  const answer: AuthorizeRequests["answer"] = (frame) => {
    const waiting = authorizations.get(frame.requestId)
    if (waiting === undefined) return
    authorizations.delete(frame.requestId)
    Deferred.doneUnsafe(
      waiting.answer,
      frame.type === "supervisor_authorized"
        ? Exit.succeed(frame.capability)
        : Exit.fail(new SupervisorAuthorizationFailed({ childName: waiting.childName, reason: frame.reason }))
    )
  }

  const failAll = (): void => {
    for (const [, waiting] of authorizations) {
      Deferred.doneUnsafe(waiting.answer, Exit.fail(new ConnectionLost({ operation: "authorize" })))
    }
    authorizations.clear()
  }

  return { authorize, answer, failAll }
}
