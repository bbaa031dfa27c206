/**
 * The operations of the bus-hosted workflow parent's world (`BusParent.ts`):
 * its background children `C1`–`C3` sending, progressing and ending runs,
 * the parent going busy and idle, the bus's faults, and with
 * `parentRestarts` the parent's process restarting and its session
 * generation being replaced inside the process. Plain data, generated
 * from a seed: the same list for the same seed.
 */
import { Schema } from "effect"
import { Prng } from "../Prng.ts"

/** The bus-hosted parent's children (bus session names). */
export const BUS_CHILDREN: ReadonlyArray<string> = ["C1", "C2", "C3"]

const Int = Schema.Int
const SideSchema = Schema.Literals(["client", "broker"])

/** One kind of bus workflow operation: its `_tag`, its fields, and `pauseMs`. */
const busOp = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.Struct({ _tag: Schema.Literal(tag), ...fields, pauseMs: Int })

/**
 * One operation of a bus workflow workload, after `pauseMs` of simulated
 * time. A Schema, so that a failing seed's workload, printed as JSON, runs
 * again (`npm run sim -- --workflow-bus --seed S --replay JSON`).
 */
export const BusWorkflowOpSchema = Schema.Union([
  busOp("send", { child: Schema.String, delivery: Schema.Literals(["steer", "queue"]) }),
  busOp("progress", { child: Schema.String }),
  busOp("terminal", { child: Schema.String }),
  busOp("busy", { busy: Schema.Boolean }),
  busOp("crash", { downMs: Int }),
  busOp("drop", { who: Schema.String, side: SideSchema }),
  busOp("stall", { who: Schema.String, side: SideSchema, forMs: Int }),
  /** The parent's process ends (P is killed) and starts again `downMs` later (`parentRestarts`). */
  busOp("restart", { downMs: Int }),
  /** The parent's session generation is replaced inside its process (a reload: the client stays) (`parentRestarts`). */
  busOp("reload", {})
])

/** One operation of a bus workflow workload (see `BusWorkflowOpSchema`). */
export type BusWorkflowOp = typeof BusWorkflowOpSchema.Type

/**
 * A deliberately broken composition, to prove an invariant bites:
 * `barrier-without-prelude` hands the terminal to the agent without the
 * barrier's claim of the run's queued messages (`wf-bus-terminal-order`);
 * `parent-without-journal` restarts a parent that keeps no `ParentJournal`
 * (`wf-bus-lost`: what its idle queue held goes with the process);
 * `journal-without-marks` keeps the journal but not its agent wrapper, so
 * nothing is marked consumed and a restart hands the agent again what it
 * already took (`wf-bus-duplicate`).
 */
export type BusWorkflowBrokenBuild = "barrier-without-prelude" | "parent-without-journal" | "journal-without-marks"

/**
 * A seeded workload: children's sends (mostly), terminals (each followed by
 * the child's next run), the parent going busy and idle, broker and
 * connection faults, and with `parentRestarts` the parent's process
 * restarting. Plain data: the same list for the same seed (and, without
 * restarts, the same list as before they existed).
 */
export const generateBusWorkflowWorkload = (
  seed: number,
  count = 30,
  options: { readonly parentRestarts?: boolean | undefined } = {}
): ReadonlyArray<BusWorkflowOp> => {
  const prng = Prng.derive(seed, "bus-workflow")
  const ops: Array<BusWorkflowOp> = []
  const who = ["P", ...BUS_CHILDREN]
  for (let i = 0; i < count; i++) {
    const pauseMs = prng.chance(0.6) ? prng.int(0, 20) : prng.int(50, 2500)
    // A weight of 0 is never drawn and leaves the others' draws as they were.
    const restart = options.parentRestarts === true ? 1 : 0
    const kind = prng.weighted({ send: 8, progress: 4, terminal: 3, busy: 3, crash: 1, drop: 2, stall: 1, restart, reload: restart })
    switch (kind) {
      case "send":
        ops.push({ _tag: "send", child: prng.pick(BUS_CHILDREN), delivery: prng.chance(0.5) ? "steer" : "queue", pauseMs })
        break
      case "progress":
        ops.push({ _tag: "progress", child: prng.pick(BUS_CHILDREN), pauseMs })
        break
      case "terminal":
        ops.push({ _tag: "terminal", child: prng.pick(BUS_CHILDREN), pauseMs })
        break
      case "busy":
        ops.push({ _tag: "busy", busy: prng.chance(0.6), pauseMs })
        break
      case "crash":
        ops.push({ _tag: "crash", downMs: prng.int(100, 3000), pauseMs })
        break
      case "drop":
        ops.push({ _tag: "drop", who: prng.pick(who), side: prng.chance(0.5) ? "client" : "broker", pauseMs })
        break
      case "stall":
        ops.push({ _tag: "stall", who: prng.pick(who), side: prng.chance(0.5) ? "client" : "broker", forMs: prng.int(100, 2000), pauseMs })
        break
      case "restart":
        ops.push({ _tag: "restart", downMs: prng.int(0, 2000), pauseMs })
        break
      case "reload":
        ops.push({ _tag: "reload", pauseMs })
        break
    }
  }
  return ops
}
