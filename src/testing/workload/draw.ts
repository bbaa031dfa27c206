/**
 * The ordinary ops of a generated workload, drawn by weight from the seed's
 * own stream (`Prng.derive(seed, "workload")`): traffic, lifecycle actions
 * and faults, and what `hostile`, `groups`, `delivery`, `topics` and
 * `unregister` mix in, with the weights they are drawn by. The ops a flag
 * inserts come after, from streams of their own (Workload.ts).
 */
import type { Side } from "../Ledger.ts"
import { Prng } from "../Prng.ts"
import { DELIVERY_WEIGHT, drawDeliverySend } from "../simulation/delivery.ts"
import { HOSTILE_ATTACKS } from "../simulation/hostile.ts"
import { defaultWeights, type Op, type OpWeights } from "./ops.ts"
import type { WorkloadOptions } from "./options.ts"
import { childIndexOf, groupOfIndex, HOSTILE_SESSIONS, SUPERVISOR_INDEX } from "./world.ts"

/** How often a session leaves by `unregister` in a workload with `unregister`. */
export const UNREGISTER_WEIGHT = 4

/** Topics a workload with `topics` publishes on (`topic-0`, `topic-1`, …). */
export const TOPIC_COUNT = 2
/** How often a publication is drawn in a workload with `topics`. */
export const TOPICS_PUBLISH_WEIGHT = 12
/** How often a subscription is drawn in a workload with `topics`. */
export const TOPICS_SUBSCRIBE_WEIGHT = 6

/** How often a hostile attack is drawn, against the other operations' weights (about one op in 25). */
export const HOSTILE_WEIGHT = 4

/** How often the child's `supervisorSend` is drawn in a workload with groups. */
export const GROUPS_SUPERVISOR_WEIGHT = 8

/**
 * The ordinary ops of `seed`'s workload in a world of `sessions`, drawn by
 * `options`' weights (before any op a flag inserts): the same list every time.
 */
export const drawPlainOps = (seed: number, sessions: number, options: WorkloadOptions = {}): Array<Op> => {
  const prng = Prng.derive(seed, "workload")
  const groups = options.groups === true && sessions >= 2
  const weights: OpWeights = {
    ...defaultWeights,
    ...(options.hostile === true ? { Hostile: HOSTILE_WEIGHT } : {}),
    ...(groups ? { SupervisorSend: GROUPS_SUPERVISOR_WEIGHT } : {}),
    ...(options.delivery === true ? { DeliverySend: DELIVERY_WEIGHT } : {}),
    ...(options.topics === true ? { Publish: TOPICS_PUBLISH_WEIGHT, Subscribe: TOPICS_SUBSCRIBE_WEIGHT } : {}),
    ...(options.unregister === true ? { Unregister: UNREGISTER_WEIGHT } : {}),
    ...options.weights
  }
  const count = options.ops ?? 40
  const ops: Array<Op> = []
  const session = () => prng.int(0, sessions - 1)
  /** Another session than `from`, mostly (a few self-targets exercise the refusal). */
  const target = (from: number) => {
    if (sessions < 2 || prng.chance(0.04)) return from
    const other = prng.int(0, sessions - 2)
    return other >= from ? other + 1 : other
  }
  const side = (): Side => prng.chance(0.5) ? "client" : "broker"
  /** With groups: mostly a session of the sender's own group, one time in four the other group's. */
  const groupTarget = (from: number) => {
    const mine = groupOfIndex(from)
    const same: Array<number> = []
    const others: Array<number> = []
    for (let i = 0; i < sessions; i++) if (i !== from) (groupOfIndex(i) === mine ? same : others).push(i)
    if (prng.chance(0.04)) return from
    return prng.chance(0.25) || same.length === 0 ? prng.pick(others) : prng.pick(same)
  }
  /** A send or ask: its target, and with groups, by exact id (half the time when it crosses). */
  const addressed = (from: number) => {
    if (!groups) return { from, to: target(from) }
    const to = groupTarget(from)
    return groupOfIndex(to) !== groupOfIndex(from) && prng.chance(0.5) ? { from, to, byId: true } : { from, to }
  }
  /** Lifecycle actions: with groups, never the supervisor (a new client holds no capability; see docs/testing.md). */
  const lifecycleSession = () => {
    const drawn = session()
    return groups && drawn === SUPERVISOR_INDEX ? childIndexOf(sessions) : drawn
  }
  for (let i = 0; i < count; i++) {
    // Bursts (many ops in the same few ms) and pauses.
    const after = prng.chance(0.35) ? prng.int(0, 20) : prng.int(20, 2500)
    const kind = prng.weighted(weights)
    switch (kind) {
      case "Send":
        ops.push({ _tag: "Send", after, ...addressed(session()) })
        break
      case "DeliverySend": {
        const from = session()
        ops.push({ _tag: "DeliverySend", after, from, to: target(from), ...drawDeliverySend(prng) })
        break
      }
      case "Ask":
        ops.push({ _tag: "Ask", after, ...addressed(session()), timeoutMs: prng.int(2, 20) * 1000 })
        break
      case "SupervisorSend":
        ops.push({ _tag: "SupervisorSend", after, from: childIndexOf(sessions), ask: prng.chance(0.5), timeoutMs: prng.int(2, 20) * 1000 })
        break
      case "CancelAsk":
        ops.push({ _tag: "CancelAsk", after, session: session() })
        break
      case "Reply":
        ops.push({ _tag: "Reply", after, from: session() })
        break
      case "List":
        ops.push({ _tag: "List", after, from: session() })
        break
      case "Status":
        ops.push({ _tag: "Status", after, session: session(), busy: prng.chance(0.5) })
        break
      case "Unregister":
        // Half the time it stops reading and leaves a few ops later, so mail reaches it that it leaves unread.
        ops.push({ _tag: kind, after, session: lifecycleSession(), lingerOps: prng.chance(0.5) ? 0 : prng.int(1, 4) })
        break
      case "Stop":
      case "Start":
      case "Kill":
        ops.push({ _tag: kind, after, session: lifecycleSession() })
        break
      case "ReplaceGeneration":
        ops.push({ _tag: kind, after, session: session() })
        break
      case "CrashBroker":
        ops.push({ _tag: "CrashBroker", after, downMs: prng.int(0, 6000) })
        break
      case "Drop":
        ops.push({ _tag: "Drop", after, session: session(), side: side() })
        break
      case "Stall":
        ops.push({ _tag: "Stall", after, session: session(), side: side(), ms: prng.int(100, 15_000) })
        break
      case "DelayWrites":
        ops.push({
          _tag: "DelayWrites",
          after,
          session: session(),
          side: side(),
          delayMs: prng.int(1, 800),
          forMs: prng.int(500, 10_000)
        })
        break
      case "ClockJump":
        ops.push({ _tag: "ClockJump", after, ms: prng.chance(0.7) ? prng.int(1000, 120_000) : -prng.int(1, 5000) })
        break
      case "Hostile":
        ops.push({ _tag: "Hostile", after, attacker: prng.int(0, HOSTILE_SESSIONS - 1), attack: prng.pick(HOSTILE_ATTACKS) })
        break
      case "Publish":
        ops.push({
          _tag: "Publish",
          after,
          from: session(),
          topic: prng.int(0, TOPIC_COUNT - 1),
          event: prng.pick(["update", "update", "blocker", "decision", "release"] as const)
        })
        break
      case "Subscribe":
        ops.push({ _tag: "Subscribe", after, from: session(), topic: prng.int(0, TOPIC_COUNT - 1), awaitRelease: prng.chance(0.5) })
        break
      case "Storm":
      case "Flood":
      case "ParkedFlush":
      case "HeldReturn":
      case "CustodyHold":
      case "SettleHold":
      case "SettleCustody":
      case "InstanceControl":
      case "ReaderReturn":
      case "StaleAsk":
      case "AnswerTakeover":
      case "AnswerMailbox":
      case "Control":
        // Weight 0 unless a caller's weights say otherwise; inserted after these draws (Workload.ts, INSERTIONS).
        break
    }
  }
  return ops
}
