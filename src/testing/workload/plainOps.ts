/**
 * The ordinary ops of a workload — traffic, lifecycle actions, faults,
 * hostile attacks, delivery and topic traffic, and `Control` — printed and
 * run one at a time (the ops a flag inserts print and run through
 * Workload.ts's table instead). `applyOps` keeps the script's state and
 * calls these.
 */
import { Effect } from "effect"
import { formatControl, runControl } from "../simulation/controls.ts"
import { formatDeliverySend, runDeliverySend } from "../simulation/delivery.ts"
import type { SimSession, SimulationService } from "../simulation/types.ts"
import type { PlainOp } from "./ops.ts"

const nameAt = (sessions: ReadonlyArray<SimSession>, index: number): SimSession | undefined => sessions[index]

/** An ordinary op on one line, like the scenario it is, without its `+Nms` (`formatOp` adds it). */
export const formatPlainOp = (op: PlainOp, name: (index: number) => string): string => {
  switch (op._tag) {
    case "Send":
      return `${name(op.from)} sends to ${name(op.to)}${op.byId === true ? " by id" : ""}`
    case "Ask":
      return `${name(op.from)} asks ${name(op.to)}${op.byId === true ? " by id" : ""} (timeout ${op.timeoutMs} ms)`
    case "SupervisorSend":
      return `${name(op.from)} ${op.ask ? `asks its supervisor (timeout ${op.timeoutMs} ms)` : "tells its supervisor"}`
    case "CancelAsk":
      return `${name(op.session)} cancels its ask`
    case "Reply":
      return `${name(op.from)} replies (no target named)`
    case "List":
      return `${name(op.from)} lists`
    case "Status":
      return `${name(op.session)} is ${op.busy ? "busy" : "idle"}`
    case "Stop":
      return `${name(op.session)} stops`
    case "Start":
      return `${name(op.session)} starts`
    case "Kill":
      return `${name(op.session)} is killed`
    case "Unregister":
      return `${name(op.session)} ${op.lingerOps > 0 ? `stops reading, and ${op.lingerOps} op(s) later ` : ""}leaves (unregister)`
    case "ReplaceGeneration":
      return `${name(op.session)} replaces its generation`
    case "CrashBroker":
      return `the broker crashes, down for ${op.downMs} ms`
    case "Drop":
      return `${name(op.session)}'s connection drops on the ${op.side} side`
    case "Stall":
      return `${name(op.session)}'s ${op.side} stops reading for ${op.ms} ms`
    case "DelayWrites":
      return `${name(op.session)}'s ${op.side} writes take ${op.delayMs} ms for ${op.forMs} ms`
    case "ClockJump":
      return `the wall clock jumps ${op.ms >= 0 ? "forward" : "back"} ${Math.abs(op.ms)} ms`
    case "Hostile":
      return `hostile X${op.attacker + 1}: ${op.attack}`
    case "DeliverySend":
      return formatDeliverySend(op, name(op.from), name(op.to))
    case "Publish":
      return `${name(op.from)} publishes ${op.event} on topic-${op.topic}`
    case "Subscribe":
      return `${name(op.from)} subscribes to topic-${op.topic}${op.awaitRelease ? " (awaitRelease)" : ""}`
    case "Control":
      return formatControl(op, name(op.from))
  }
}

/**
 * Runs an ordinary op, the `index`th of the script and its `counter`th
 * (message texts carry it). An `Unregister` that lingers stops its
 * session's reading and has `leaveBefore` unregister it before a later op.
 */
export const runPlainOp = (
  sim: SimulationService,
  op: PlainOp,
  counter: number,
  index: number,
  leaveBefore: (session: SimSession, at: number) => void
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sessions = sim.sessions
    switch (op._tag) {
      case "Send": {
        const from = nameAt(sessions, op.from)
        const to = nameAt(sessions, op.to)
        if (from !== undefined && to !== undefined) {
          yield* from.send(op.byId === true ? to.id : to.name, `msg ${counter} ${from.name}→${to.name}`)
        }
        break
      }
      case "Ask": {
        const from = nameAt(sessions, op.from)
        const to = nameAt(sessions, op.to)
        if (from !== undefined && to !== undefined) {
          yield* from.ask(op.byId === true ? to.id : to.name, `question ${counter} ${from.name}→${to.name}`, {
            timeout: op.timeoutMs
          })
        }
        break
      }
      case "SupervisorSend": {
        const from = nameAt(sessions, op.from)
        if (from !== undefined) {
          yield* from.supervisorSend(`${op.ask ? "decision" : "progress"} ${counter} ${from.name}→supervisor`, {
            ask: op.ask,
            timeout: op.timeoutMs
          })
        }
        break
      }
      case "CancelAsk":
        yield* nameAt(sessions, op.session)?.cancelAsks ?? Effect.void
        break
      case "Reply":
        yield* Effect.asVoid(nameAt(sessions, op.from)?.reply(`answer ${counter}`) ?? Effect.void)
        break
      case "List":
        yield* Effect.asVoid(nameAt(sessions, op.from)?.list ?? Effect.void)
        break
      case "Status":
        yield* nameAt(sessions, op.session)?.setStatus(op.busy ? "thinking" : "idle") ?? Effect.void
        break
      case "Stop":
        yield* nameAt(sessions, op.session)?.stop ?? Effect.void
        break
      case "Start":
        yield* nameAt(sessions, op.session)?.start ?? Effect.void
        break
      case "Kill":
        yield* nameAt(sessions, op.session)?.kill ?? Effect.void
        break
      case "Unregister": {
        const session = nameAt(sessions, op.session)
        if (session === undefined) break
        if (op.lingerOps > 0 && (yield* session.running)) {
          yield* session.stall("client")
          leaveBefore(session, index + op.lingerOps + 1)
        } else {
          yield* session.unregister
        }
        break
      }
      case "ReplaceGeneration":
        yield* nameAt(sessions, op.session)?.replaceGeneration ?? Effect.void
        break
      case "CrashBroker":
        yield* sim.broker.crashFor(op.downMs)
        break
      case "Drop":
        yield* nameAt(sessions, op.session)?.drop(op.side) ?? Effect.void
        break
      case "Stall":
        yield* nameAt(sessions, op.session)?.stall(op.side, op.ms) ?? Effect.void
        break
      case "DelayWrites":
        yield* nameAt(sessions, op.session)?.delayWrites(op.side, op.delayMs, op.forMs) ?? Effect.void
        break
      case "ClockJump":
        yield* sim.jumpClock(op.ms)
        break
      case "Hostile":
        yield* sim.hostiles[op.attacker]?.attack(op.attack) ?? Effect.void
        break
      case "DeliverySend": {
        const from = nameAt(sessions, op.from)
        const to = nameAt(sessions, op.to)
        if (from !== undefined && to !== undefined) yield* runDeliverySend(sim, op, from, to, counter)
        break
      }
      case "Publish": {
        const from = nameAt(sessions, op.from)
        const release = op.event === "release" ? { resource: `res-${op.topic}`, ownership: "released" } : {}
        yield* Effect.asVoid(
          from?.topic({ action: "publish", topic: `topic-${op.topic}`, event: op.event, message: `state ${counter}`, ...release }) ??
            Effect.void
        )
        break
      }
      case "Subscribe":
        yield* Effect.asVoid(
          nameAt(sessions, op.from)?.topic({ action: "subscribe", topic: `topic-${op.topic}`, awaitRelease: op.awaitRelease }) ??
            Effect.void
        )
        break
      case "Control": {
        const from = nameAt(sessions, op.from)
        if (from !== undefined) yield* runControl(from, op.action, op.back, counter)
        break
      }
    }
  })
