/**
 * The operations of a generated workload: their Schema (a printed workload
 * reads back), their kinds, and the weights the ordinary ops are drawn by.
 * The ops a workload flag inserts (`InsertedKind`) have weight 0: their
 * fields, draws and runners are in their own modules under simulation/,
 * and Workload.ts's table lists them.
 */
import { Schema } from "effect"
import { ControlFields } from "../simulation/controls.ts"
import { CustodyHoldFields } from "../simulation/custodyHold.ts"
import { DeliverySendFields } from "../simulation/delivery.ts"
import { HeldReturnFields } from "../simulation/heldReturn.ts"
import { HostileAttack } from "../simulation/hostile.ts"
import { InstanceControlFields } from "../simulation/instanceControl.ts"
import { ParkedFlushFields } from "../simulation/parkedFlush.ts"
import { FloodFields, StormFields } from "../simulation/pressure.ts"
import { ReaderReturnFields } from "../simulation/readerReturn.ts"
import { GroupMoveFields } from "../simulation/groupMove.ts"
import { SettleCustodyFields } from "../simulation/settleCustody.ts"
import { SettleHoldFields } from "../simulation/settleHold.ts"
import { StaleAskFields } from "../simulation/staleAsk.ts"
import { AnswerTakeoverFields } from "../simulation/answerTakeover.ts"
import { AnswerMailboxFields } from "../simulation/answerMailbox.ts"

const Int = Schema.Int
const SideSchema = Schema.Literals(["client", "broker"])
const op = <Tag extends string, Fields extends Schema.Struct.Fields>(tag: Tag, fields: Fields) =>
  Schema.Struct({ _tag: Schema.tag(tag), after: Int, ...fields })

/**
 * One operation of a workload. Sessions are named by index into the world's
 * sessions; `after` is the simulated time (ms) before it. A Schema, so a
 * printed workload can be read back (`npm run sim -- --replay`).
 */
export const OpSchema = Schema.Union([
  op("Send", { from: Int, to: Int, byId: Schema.optionalKey(Schema.Boolean) }),
  op("Ask", { from: Int, to: Int, timeoutMs: Int, byId: Schema.optionalKey(Schema.Boolean) }),
  op("SupervisorSend", { from: Int, ask: Schema.Boolean, timeoutMs: Int }),
  op("CancelAsk", { session: Int }),
  op("Reply", { from: Int }),
  op("List", { from: Int }),
  op("Status", { session: Int, busy: Schema.Boolean }),
  op("Stop", { session: Int }),
  op("Start", { session: Int }),
  op("Kill", { session: Int }),
  op("Unregister", { session: Int, lingerOps: Int }),
  op("ReplaceGeneration", { session: Int }),
  op("CrashBroker", { downMs: Int }),
  op("Drop", { session: Int, side: SideSchema }),
  op("Stall", { session: Int, side: SideSchema, ms: Int }),
  op("DelayWrites", { session: Int, side: SideSchema, delayMs: Int, forMs: Int }),
  op("ClockJump", { ms: Int }),
  op("Hostile", { attacker: Int, attack: HostileAttack }),
  op("DeliverySend", DeliverySendFields),
  op("Publish", { from: Int, topic: Int, event: Schema.Literals(["update", "blocker", "decision", "release"]) }),
  op("Subscribe", { from: Int, topic: Int, awaitRelease: Schema.Boolean }),
  op("Storm", StormFields),
  op("Flood", FloodFields),
  op("ParkedFlush", ParkedFlushFields),
  op("HeldReturn", HeldReturnFields),
  op("CustodyHold", CustodyHoldFields),
  op("SettleHold", SettleHoldFields),
  op("SettleCustody", SettleCustodyFields),
  op("InstanceControl", InstanceControlFields),
  op("ReaderReturn", ReaderReturnFields),
  op("GroupMove", GroupMoveFields),
  op("StaleAsk", StaleAskFields),
  op("AnswerTakeover", AnswerTakeoverFields),
  op("AnswerMailbox", AnswerMailboxFields),
  op("Control", ControlFields)
])
/** One operation of a workload (see `OpSchema`). */
export type Op = typeof OpSchema.Type

/** The kinds of operation. */
export type OpKind = Op["_tag"]

/** Relative weights of each kind of operation; 0 never generates it. */
export type OpWeights = Readonly<Record<OpKind, number>>

/** The kinds of operation a workload flag inserts (Workload.ts's table), never drawn by weight. */
export type InsertedKind =
  | "Storm"
  | "Flood"
  | "ParkedFlush"
  | "HeldReturn"
  | "CustodyHold"
  | "SettleHold"
  | "SettleCustody"
  | "InstanceControl"
  | "ReaderReturn"
  | "GroupMove"
  | "StaleAsk"
  | "AnswerTakeover"
  | "AnswerMailbox"

/** The op of kind `K`. */
export type OpOf<K extends OpKind> = Extract<Op, { readonly _tag: K }>

/** An op a workload flag inserts. */
export type InsertedOpOf = OpOf<InsertedKind>

/** An ordinary op: drawn by weight (or, `Control`, after the sends), printed and run by workload/plainOps.ts. */
export type PlainOp = Exclude<Op, InsertedOpOf>

/** Traffic only: sends, asks, cancels, replies, lists, presence; no faults (`npm run sim -- --traffic`). */
export const trafficWeights: OpWeights = {
  Send: 40,
  Ask: 20,
  SupervisorSend: 0,
  CancelAsk: 3,
  Reply: 4,
  List: 6,
  Status: 6,
  Stop: 0,
  Start: 0,
  Kill: 0,
  // Only with `WorkloadOptions.unregister` (UNREGISTER_WEIGHT); the orderly `Stop` unregisters too.
  Unregister: 0,
  ReplaceGeneration: 0,
  CrashBroker: 0,
  Drop: 0,
  Stall: 0,
  DelayWrites: 0,
  ClockJump: 0,
  Hostile: 0,
  DeliverySend: 0,
  Publish: 0,
  Subscribe: 0,
  // Never drawn by weight: `pressure` inserts them from a stream of their own (simulation/pressure.ts).
  Storm: 0,
  Flood: 0,
  // Never drawn by weight: `parkedFlush` inserts it from a stream of its own (simulation/parkedFlush.ts).
  ParkedFlush: 0,
  // Never drawn by weight: `heldReturn` inserts it from a stream of its own (simulation/heldReturn.ts).
  HeldReturn: 0,
  // Never drawn by weight: `custodyHold` inserts it from a stream of its own (simulation/custodyHold.ts).
  CustodyHold: 0,
  // Never drawn by weight: `settleHold` inserts it from a stream of its own (simulation/settleHold.ts).
  SettleHold: 0,
  // Never drawn by weight: `settleHold` inserts it too, from a stream of its own (simulation/settleCustody.ts).
  SettleCustody: 0,
  // Never drawn by weight: `instanceControl` inserts it from a stream of its own (simulation/instanceControl.ts).
  InstanceControl: 0,
  // Never drawn by weight: `readerReturn` inserts it from a stream of its own (simulation/readerReturn.ts).
  ReaderReturn: 0,
  // Never drawn by weight: `groupMove` inserts it from a stream of its own (simulation/groupMove.ts).
  GroupMove: 0,
  // Never drawn by weight: `staleAsk` inserts it from a stream of its own (simulation/staleAsk.ts).
  StaleAsk: 0,
  // Never drawn by weight: `answerTakeover` inserts it from a stream of its own (simulation/answerTakeover.ts).
  AnswerTakeover: 0,
  // Never drawn by weight: `answerMailbox` inserts it from a stream of its own (simulation/answerMailbox.ts).
  AnswerMailbox: 0,
  // Never drawn by weight: inserted after some sends from a stream of its own (simulation/controls.ts).
  Control: 0
}

/** Traffic plus every lifecycle action and fault. */
export const defaultWeights: OpWeights = {
  ...trafficWeights,
  Stop: 3,
  Start: 4,
  Kill: 2,
  ReplaceGeneration: 3,
  CrashBroker: 2,
  Drop: 4,
  Stall: 3,
  DelayWrites: 3,
  ClockJump: 2
}
