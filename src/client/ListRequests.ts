/**
 * One connection's `list` requests: a whole list (page by page from a broker
 * that pages, `list-page-v1`), the liveness `probe` (P96) and the asker's
 * settling round trip (`settle`, `ask-expiry-v1`). It owns the requests
 * waiting for their `sessions` answer by `requestId`: the reader hands each
 * answer here (`answer`; a late or unknown one never answers a newer request,
 * C-BRK-6), and the close fails every one still waiting with `ConnectionLost`
 * (`failAll`). Owned by one `ClientConnection`; its table is touched only
 * synchronously.
 */
import { Deferred, Effect, Exit, type Option } from "effect"
import { randomUUID } from "node:crypto"
import { ASK_EXPIRY_V1, LIST_PAGE_V1 } from "../protocol/features.ts"
import type { SessionInfo, SessionsFrame } from "../protocol/frames.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import type { ConnectionWrites } from "./ConnectionWrites.ts"
import { ConnectionLost } from "./errors.ts"
import { writeThenAwait } from "./requests.ts"

/** One `sessions` answer: all sessions (base), or one page with where to go on (`list-page-v1`). */
interface SessionsPage {
  readonly sessions: ReadonlyArray<SessionInfo>
  readonly nextCursor?: string
}

/**
 * The `list` requests of one connection, as `makeListRequests` makes them: the connection's `list`, `probe`
 * and `settle` (ClientConnection.ts says what each does), and what the reader and the close call.
 */
export interface ListRequests extends Pick<ClientConnection, "list" | "probe" | "settle"> {
  /** A `sessions` frame was read: answers the request waiting for it, if one still does. */
  readonly answer: (frame: SessionsFrame) => void
  /** The connection closed: every request still waiting fails with `ConnectionLost`. */
  readonly failAll: () => void
}

/** The `list` requests of a connection the broker granted `granted`, written through `writes`. */
export const makeListRequests = (granted: ReadonlySet<string>, writes: ConnectionWrites): ListRequests => {
  const lists = new Map<string, Deferred.Deferred<SessionsPage, ConnectionLost>>()

  /**
   * One `list` request: a base answer, or one page (`list-page-v1`) starting after `cursor`, of at
   * most `limit` sessions (sent only to a broker that granted `list-page-v1`); `settle` marks the
   * asker's settling round trip (sent only to a broker that granted `ask-expiry-v1`).
   */
  const listRequest = (
    cursor: string | undefined,
    group: string | undefined,
    limit?: number,
    settle = false
  ) => {
    const requestId = randomUUID()
    const answer = Deferred.makeUnsafe<SessionsPage, ConnectionLost>()
    lists.set(requestId, answer)
    const frame = {
      type: "list",
      requestId,
      ...(cursor === undefined ? {} : { cursor }),
      ...(group === undefined ? {} : { group }),
      ...(limit === undefined || !granted.has(LIST_PAGE_V1) ? {} : { limit }),
      ...(settle && granted.has(ASK_EXPIRY_V1) ? { settle: true } : {})
    }
    return { answer, written: writes.write(frame, "list"), forget: () => lists.delete(requestId) }
  }
  const listPage = (
    timeoutMs: number,
    cursor: string | undefined,
    group: string | undefined,
    limit?: number
  ) =>
    Effect.suspend(() => {
      const { answer, forget, written } = listRequest(cursor, group, limit)
      return writeThenAwait(written, answer, timeoutMs, "list", forget).pipe(
        Effect.onInterrupt(() => Effect.sync(forget))
      )
    })

  // Every live session: page by page when the broker pages (each page has its own timeout).
  const list: ListRequests["list"] = (timeoutMs, group) =>
    Effect.gen(function*() {
      const sessions: Array<SessionInfo> = []
      const seen = new Set<string>()
      let cursor: string | undefined
      do {
        const page: SessionsPage = yield* listPage(timeoutMs, cursor, group)
        for (const session of page.sessions) {
          if (seen.has(session.id)) continue
          seen.add(session.id)
          sessions.push(session)
        }
        cursor = page.nextCursor
      } while (cursor !== undefined)
      return sessions
    })

  const probe: ListRequests["probe"] = (timeoutMs) => Effect.asVoid(listPage(timeoutMs, undefined, undefined, 1))
  // The settling `list` stays registered across its waits (a broker may hold its answer: keepWaiting decides).
  const settle: ListRequests["settle"] = <E>(timeoutMs: number, keepWaiting: Effect.Effect<number | undefined, E>) =>
    Effect.suspend(() => {
      const { answer, forget, written } = listRequest(undefined, undefined, 1, true)
      const onUnanswered = (answered: Option.Option<SessionsPage>): Effect.Effect<boolean, ConnectionLost | E> =>
        answered._tag === "Some"
          ? Effect.succeed(true)
          : Effect.flatMap(keepWaiting, (waitMs) =>
            waitMs === undefined
              ? Effect.succeed(false)
              : Effect.flatMap(Effect.timeoutOption(Deferred.await(answer), waitMs), onUnanswered))
      return Effect.timeoutOption(Effect.andThen(written, Deferred.await(answer)), timeoutMs).pipe(
        Effect.flatMap(onUnanswered),
        Effect.ensuring(Effect.sync(forget))
      )
    })

  const answer = (frame: SessionsFrame): void => {
    const waiting = lists.get(frame.requestId)
    if (waiting === undefined) return // late or unknown: never answers a newer request (C-BRK-6)
    lists.delete(frame.requestId)
    Deferred.doneUnsafe(waiting, Exit.succeed(frame))
  }

  const failAll = (): void => {
    for (const [, waiting] of lists) Deferred.doneUnsafe(waiting, Exit.fail(new ConnectionLost({ operation: "list" })))
    lists.clear()
  }

  return { list, probe, settle, answer, failAll }
}
