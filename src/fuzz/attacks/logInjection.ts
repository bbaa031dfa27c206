/**
 * Log injection: client-supplied text that the broker writes into its log —
 * an unknown frame type, a session name, id or scope, a list cursor — with a
 * newline followed by a line that looks like the broker's own. The campaign
 * reads the broker's log at the end: a line that starts with `FORGED_LOG_LINE`
 * was written by an attacker.
 */
import { Effect } from "effect"
import { LIST_PAGE_V1 } from "../../protocol/features.ts"
import { type AttackKit, registerFrame, roundTrip } from "./kit.ts"

/** The start of the fake log line the attack injects (a date no real line has). */
export const FORGED_LOG_LINE = "1999-01-01T00:00:00.000Z INFO session joined: forged-by-fuzz"

/** Text that, written raw into a log line, starts a forged line. */
const inject = (kit: AttackKit): string => `x${kit.prng.pick(["\n", "\r\n", "\n\n"])}${FORGED_LOG_LINE} (${kit.tag})`

/** One piece of client text with a newline and a fake log line, where the broker logs it. */
export const logInjection = (kit: AttackKit) =>
  Effect.gen(function*() {
    const conn = yield* kit.open()
    if (conn === undefined) return
    switch (kit.prng.int(0, 4)) {
      case 0:
        yield* kit.send(conn, { type: inject(kit) })
        yield* roundTrip(kit, conn)
        return
      case 1:
        yield* kit.register(conn, { name: inject(kit) })
        break
      case 2:
        yield* kit.register(conn, { sessionId: inject(kit) })
        break
      case 3:
        yield* kit.send(conn, registerFrame(kit, { scopeId: inject(kit) }))
        break
      default:
        yield* kit.register(conn, { features: [LIST_PAGE_V1] })
        yield* kit.send(conn, { type: "list", requestId: "r", cursor: inject(kit) })
        yield* roundTrip(kit, conn)
        return
    }
    yield* roundTrip(kit, conn)
  })
