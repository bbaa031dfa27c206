/**
 * Every attack the fuzzer knows, with its category, how often it is drawn,
 * and the finding of issue "Hostile and oversized input cannot hurt other
 * sessions" it is aimed at. Weights keep the byte-heavy attacks rare, so a
 * frame budget is spent mostly on many small hostile frames.
 */
import type { Effect, Scope } from "effect"
import { askFlood, connectStorm, departedFlood, mailboxFlood, neverReads, registerChurn } from "./churn.ts"
import { collidingIds, forgedFrom, forgedReply, foreignControl, nameSquat, scopeHop } from "./forged.ts"
import type { AttackKit } from "./kit.ts"
import { logInjection } from "./logInjection.ts"
import {
  badLength,
  badUtf8,
  beforeRegistration,
  garbage,
  registerTwice,
  splitFrames,
  unknownType,
  wrongTypes
} from "./malformed.ts"
import { bigEcho, bigId, bigMessage, bigPresence, bigReceipt, bigRecords, bigRegister, manyExtensions } from "./oversized.ts"
import { slowDrip } from "./slow.ts"

/** The families of attacks. */
export type AttackCategory = "malformed" | "forged" | "oversized" | "churn" | "slow" | "log"

/** One attack of the catalogue. */
export interface AttackSpec {
  readonly kind: string
  readonly category: AttackCategory
  /** Relative frequency. */
  readonly weight: number
  /** The finding of the issue it is aimed at, if any. */
  readonly aims?: string
  readonly run: (kit: AttackKit) => Effect.Effect<void, never, Scope.Scope>
}

/** The catalogue. */
export const ATTACKS: ReadonlyArray<AttackSpec> = [
  { kind: "garbage", category: "malformed", weight: 10, run: garbage },
  { kind: "wrong-types", category: "malformed", weight: 10, run: wrongTypes },
  { kind: "unknown-type", category: "malformed", weight: 5, run: unknownType },
  { kind: "before-register", category: "malformed", weight: 6, run: beforeRegistration },
  { kind: "register-twice", category: "malformed", weight: 4, run: registerTwice },
  { kind: "bad-length", category: "malformed", weight: 4, run: badLength },
  { kind: "split-frames", category: "malformed", weight: 8, run: splitFrames },
  { kind: "bad-utf8", category: "malformed", weight: 5, run: badUtf8 },
  { kind: "forged-from", category: "forged", weight: 4, run: forgedFrom },
  { kind: "forged-reply", category: "forged", weight: 6, aims: "4", run: forgedReply },
  { kind: "colliding-ids", category: "forged", weight: 14, aims: "4", run: collidingIds },
  { kind: "foreign-control", category: "forged", weight: 8, aims: "4", run: foreignControl },
  { kind: "name-squat", category: "forged", weight: 3, run: nameSquat },
  { kind: "scope-hop", category: "forged", weight: 3, run: scopeHop },
  { kind: "big-register", category: "oversized", weight: 3, aims: "1", run: bigRegister },
  { kind: "big-presence", category: "oversized", weight: 2, aims: "1", run: bigPresence },
  { kind: "big-receipt", category: "oversized", weight: 2, aims: "1", run: bigReceipt },
  { kind: "big-echo", category: "oversized", weight: 3, aims: "6", run: bigEcho },
  { kind: "big-message", category: "oversized", weight: 2, run: bigMessage },
  { kind: "big-id", category: "oversized", weight: 2, aims: "6, 9", run: bigId },
  { kind: "many-extensions", category: "oversized", weight: 2, run: manyExtensions },
  { kind: "big-records", category: "oversized", weight: 2, aims: "5", run: bigRecords },
  { kind: "connect-storm", category: "churn", weight: 2, aims: "3", run: connectStorm },
  { kind: "register-churn", category: "churn", weight: 3, aims: "9", run: registerChurn },
  { kind: "departed-flood", category: "churn", weight: 1, aims: "2, 9", run: departedFlood },
  { kind: "mailbox-flood", category: "churn", weight: 1, aims: "9", run: mailboxFlood },
  { kind: "ask-flood", category: "churn", weight: 2, aims: "9", run: askFlood },
  { kind: "never-reads", category: "churn", weight: 1, aims: "9", run: neverReads },
  { kind: "slow-drip", category: "slow", weight: 2, aims: "8", run: slowDrip },
  { kind: "log-injection", category: "log", weight: 3, aims: "7", run: logInjection }
]

/** The attacks named in `only` (every attack when it is empty); unknown names are reported. */
export const selectAttacks = (only: ReadonlyArray<string>): { readonly attacks: ReadonlyArray<AttackSpec>; readonly unknown: ReadonlyArray<string> } => {
  if (only.length === 0) return { attacks: ATTACKS, unknown: [] }
  const known = new Set(ATTACKS.flatMap((attack) => [attack.kind, attack.category]))
  return {
    attacks: ATTACKS.filter((attack) => only.includes(attack.kind) || only.includes(attack.category)),
    unknown: only.filter((name) => !known.has(name))
  }
}
