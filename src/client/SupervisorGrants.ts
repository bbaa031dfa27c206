/**
 * A supervisor's side of the supervisor channel (`supervisor-v1`): the
 * capabilities this client obtained for its children, and those an earlier
 * process of its session obtained (`issuedGrants`), kept so that after every
 * reconnect — a broker restart, or the session's leaving, forgets them — they
 * are restored with the same capability strings before the connection is
 * used (C-SUP-15, C-BRK-28).
 *
 * Owned by one `IntercomClient`; its state is a Map touched only by
 * synchronous code.
 */
import { Effect } from "effect"
import type { ClientConnection } from "./ClientConnection.ts"
import type { ConnectionLost, RequestTimeout, SupervisorAuthorizationFailed } from "./errors.ts"

/**
 * A capability a supervisor obtained for a child: start the child with it
 * (`childEnvironment`), and keep it with the child, for a restarted
 * supervisor process's `issuedGrants`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChildGrant {
  /** The child name it was issued for (`*`: the first name that registers with it). */
  readonly childName: string
  readonly capability: string
  /** The supervisor's session id: the child presents it with the capability, and sends to it. */
  readonly supervisorSessionId: string
}

/** The capabilities a supervisor client issued, and their restoration. */
export class SupervisorGrants {
  private readonly issued = new Map<string, ChildGrant>()

  /** @param earlier capabilities an earlier process of the session obtained (`issuedGrants`): restored like its own. */
  constructor(earlier: ReadonlyArray<ChildGrant> = []) {
    for (const grant of earlier) this.issued.set(grant.capability, grant)
  }

  /** Capabilities held, oldest first. */
  get all(): ReadonlyArray<ChildGrant> {
    return [...this.issued.values()]
  }

  /** A new capability for `childName`, remembered for restoration. */
  authorize(
    connection: ClientConnection,
    childName: string,
    timeoutMs: number
  ): Effect.Effect<ChildGrant, SupervisorAuthorizationFailed | RequestTimeout | ConnectionLost> {
    return connection.authorize(childName, undefined, timeoutMs).pipe(
      Effect.map((capability) => {
        const grant: ChildGrant = { childName: childName.trim(), capability, supervisorSessionId: connection.sessionId }
        this.issued.set(capability, grant)
        return grant
      })
    )
  }

  /**
   * Re-authorizes every capability on a new connection. One the broker
   * refuses (it no longer checks: another owner token) is dropped and
   * reported; one that timed out or whose connection dropped stays, for the
   * next connection. Returns the failures' texts.
   */
  restore(connection: ClientConnection, timeoutMs: number): Effect.Effect<ReadonlyArray<string>> {
    return Effect.forEach(this.all, (grant) =>
      connection.authorize(grant.childName, grant.capability, timeoutMs).pipe(
        Effect.as(undefined),
        Effect.catchTag("SupervisorAuthorizationFailed", (error) =>
          Effect.sync(() => {
            this.issued.delete(grant.capability)
            return error.message
          })),
        Effect.catch((error) => Effect.succeed(error.message))
      )).pipe(Effect.map((failures) => failures.filter((failure) => failure !== undefined)))
  }
}
