/**
 * The workflow simulation's observer: what each simulated message was (who
 * sent it, to whom, when it was accepted), where it ended up (the parent's
 * model, a stage session, the parent chat, a post-mortem turn, a
 * `replyError`), and the workflow invariants, checked as events happen and
 * once more at the end of a run.
 *
 * Plain synchronous code owned by one workflow world: the world's ports call
 * into it between two yields. See docs/testing.md, "Workflow simulation".
 */

/**
 * The workflow invariants (docs/testing.md):
 *
 * - `wf-terminal-order`: a child's message accepted before its terminal was
 *   not surfaced before the terminal (or surfaced after it);
 * - `wf-snapshot-early`: a stage's terminal snapshot was published while
 *   something it admitted was not yet in the stage, or an entry reached the
 *   stage after its snapshot;
 * - `wf-lost-at-close`: a message admitted by a stage before its close never
 *   reached that stage;
 * - `wf-stale-ack`: a detach commit went out for a runtime generation that
 *   was no longer current (a stale acknowledgement was taken);
 * - `wf-late-ask`: a late ask ended in no outcome or in more than one;
 * - `wf-lost` / `wf-duplicate`: any other message ended nowhere, or twice;
 * - `wf-skipped-launched`: a foreground group member still waiting when the
 *   group was released was launched anyway;
 * - `wf-fiber-leak`: a fiber of the world outlived it.
 *
 * @since 0.1.0
 */
export type WorkflowViolationKind =
  | "wf-terminal-order"
  | "wf-snapshot-early"
  | "wf-lost-at-close"
  | "wf-stale-ack"
  | "wf-late-ask"
  | "wf-lost"
  | "wf-duplicate"
  | "wf-skipped-launched"
  | "wf-fiber-leak"

/**
 * One broken invariant.
 *
 * @since 0.1.0
 */
export interface WorkflowViolation {
  readonly kind: WorkflowViolationKind
  readonly message: string
  readonly at: number
}

/**
 * Where a message ended.
 *
 * @since 0.1.0
 */
export type Destination = "model" | "stage" | "parent-chat" | "post-mortem" | "reply-error" | "reply"

interface MessageRecord {
  readonly label: string
  readonly from: string
  readonly to: string
  readonly ask: boolean
  readonly runId: string | undefined
  readonly acceptedAt: number
  late: boolean
  readonly ends: Array<Destination>
}

interface StageAdmitRecord {
  readonly label: string
  readonly generation: number
  beforeClose: boolean
  settled: "inserted" | "refused" | undefined
}

interface StageRecord {
  readonly admits: Map<string, StageAdmitRecord>
  closeGeneration: number | undefined
  snapshotAt: number | undefined
}

/** The ledger's counters, all zero (a soak sums them per run). */
export const emptyTally = () => ({
  messages: 0,
  terminals: 0,
  handshakes: 0,
  detached: 0,
  stagesClosed: 0,
  lateAsks: 0,
  postMortems: 0,
  replyErrors: 0,
  parentChat: 0,
  faults: 0
})

/**
 * One workflow world's ledger.
 *
 * @since 0.1.0
 */
export class WorkflowLedger {
  /** Trace lines, each stamped with the simulated time. */
  readonly lines: Array<string> = []
  /** Violations found so far. */
  readonly found: Array<WorkflowViolation> = []
  /** Invariant checks made so far. */
  checks = 0
  /** What the parent's model saw, in order (message labels and `terminal:<run>`). */
  readonly model: Array<string> = []
  private readonly messages = new Map<string, MessageRecord>()
  private readonly stages = new Map<string, StageRecord>()
  private readonly terminals: Array<{ readonly runId: string; readonly terminalAt: number }> = []
  private readonly currentGeneration = new Map<string, string>()
  /** Counters for the soak summary. */
  readonly tally = emptyTally()

  private readonly now: () => number

  constructor(now: () => number) {
    this.now = now
  }

  /** Appends a trace line. */
  note(line: string): void {
    this.lines.push(`${(this.now() / 1000).toFixed(3).padStart(9)}s  ${line}`)
  }

  /** Records a violation (and traces it). */
  violate(kind: WorkflowViolationKind, message: string): void {
    this.found.push({ kind, message, at: this.now() })
    this.note(`VIOLATION ${kind}: ${message}`)
  }

  private check(ok: boolean, kind: WorkflowViolationKind, message: () => string): void {
    this.checks++
    if (!ok) this.violate(kind, message())
  }

  /**
   * A message is accepted by its recipient (`to`: `parent` or a stage id). A message accepted again (a
   * hand-off retried, or restored by a journal after a reload) keeps its first record, so where it ended
   * so far still counts.
   */
  accepted(label: string, from: string, to: string, options: { ask: boolean; runId?: string | undefined; late?: boolean }): void {
    if (this.messages.has(label)) return
    this.tally.messages++
    this.messages.set(label, {
      label,
      from,
      to,
      ask: options.ask,
      runId: options.runId,
      acceptedAt: this.now(),
      late: options.late ?? false,
      ends: []
    })
    if (options.late === true) this.tally.lateAsks++
  }

  /** A message is known to be a late ask (it reached a closed stage). */
  markLate(label: string): void {
    const record = this.messages.get(label)
    if (record !== undefined && !record.late) {
      record.late = true
      this.tally.lateAsks++
    }
  }

  /** A message ended at `destination`. */
  ended(label: string, destination: Destination): void {
    const record = this.messages.get(label)
    if (record === undefined) return
    record.ends.push(destination)
    if (destination === "model") {
      this.model.push(label)
      // Surfaced after a terminal of its run that it preceded.
      for (const terminal of this.terminals) {
        this.check(
          record.ask || record.runId !== terminal.runId || record.acceptedAt > terminal.terminalAt,
          "wf-terminal-order",
          () => `${label} from ${record.from} (run ${terminal.runId}) was accepted at ${record.acceptedAt} ms, before that run's terminal (terminalAt ${terminal.terminalAt} ms), and surfaced after it`
        )
      }
    }
    if (destination === "post-mortem") this.tally.postMortems++
    if (destination === "reply-error") this.tally.replyErrors++
    if (destination === "parent-chat") this.tally.parentChat++
  }

  /** A child's terminal reached the parent's model. */
  terminalSurfaced(runId: string, terminalAt: number): void {
    this.tally.terminals++
    this.model.push(`terminal:${runId}`)
    for (const record of this.messages.values()) {
      if (record.ask || record.runId !== runId || record.to !== "parent" || record.acceptedAt > terminalAt) continue
      this.check(
        record.ends.includes("model") || record.ends.includes("reply"),
        "wf-terminal-order",
        () => `${record.label} from ${record.from} was accepted at ${record.acceptedAt} ms, before run ${runId}'s terminal (terminalAt ${terminalAt} ms), and had not reached the parent before it`
      )
    }
    this.terminals.push({ runId, terminalAt })
  }

  // ---------------------------------------------------------------------------
  // Stages
  // ---------------------------------------------------------------------------

  private stage(stageId: string): StageRecord {
    let record = this.stages.get(stageId)
    if (record === undefined) {
      record = { admits: new Map(), closeGeneration: undefined, snapshotAt: undefined }
      this.stages.set(stageId, record)
    }
    return record
  }

  /** An admission into the stage's current generation starts. */
  admitStarted(stageId: string, generation: number, label: string): void {
    const stage = this.stage(stageId)
    if (stage.closeGeneration !== undefined) return
    stage.admits.set(label, { label, generation, beforeClose: true, settled: undefined })
  }

  /** The stage's generation was reloaded: what it had admitted and not inserted is retried. */
  stageRetired(stageId: string, generation: number): void {
    const stage = this.stage(stageId)
    for (const [label, admit] of stage.admits) {
      if (admit.generation === generation && admit.settled === undefined) stage.admits.delete(label)
    }
  }

  /** `close` was asked of the stage's current generation. */
  closeRequested(stageId: string, generation: number): void {
    const stage = this.stage(stageId)
    stage.closeGeneration = generation
    for (const [label, admit] of stage.admits) if (admit.generation !== generation) stage.admits.delete(label)
  }

  /** The stage session took an entry into its queue. */
  inserted(stageId: string, label: string): void {
    const stage = this.stage(stageId)
    this.check(
      stage.snapshotAt === undefined,
      "wf-snapshot-early",
      () => `${label} reached stage ${stageId} after its terminal snapshot (published at ${stage.snapshotAt} ms)`
    )
    const admit = stage.admits.get(label)
    if (admit !== undefined) admit.settled = "inserted"
    this.ended(label, "stage")
  }

  /** The stage session refused an entry (a fault): it is failed, not lost. */
  insertRefused(stageId: string, label: string): void {
    const admit = this.stage(stageId).admits.get(label)
    if (admit !== undefined) admit.settled = "refused"
  }

  /** The stage's terminal snapshot is published. */
  snapshot(stageId: string): void {
    this.tally.stagesClosed++
    const stage = this.stage(stageId)
    stage.snapshotAt = this.now()
    for (const admit of stage.admits.values()) {
      this.check(
        admit.settled !== undefined,
        "wf-snapshot-early",
        () => `stage ${stageId} published its terminal snapshot while ${admit.label}, admitted before its close, was not yet in the stage`
      )
    }
  }

  // ---------------------------------------------------------------------------
  // Detach handshakes
  // ---------------------------------------------------------------------------

  /** The agent (`parent` or a stage id) is now in runtime generation `generation`. */
  generation(agent: string, generation: string): void {
    this.currentGeneration.set(agent, generation)
  }

  /** A detach request left the agent. */
  detachSent(agent: string, phase: "probe" | "commit", runtimeGeneration: string, messageId: string): void {
    if (phase === "probe") this.tally.handshakes++
    const current = this.currentGeneration.get(agent)
    if (phase === "commit") {
      this.check(
        runtimeGeneration === current,
        "wf-stale-ack",
        () => `${agent} sent a detach commit for ${messageId} in runtime generation ${runtimeGeneration}, but ${current ?? "none"} is current: a stale acknowledgement was taken`
      )
    }
  }

  /** A foreground child detached on a commit of `runtimeGeneration`. */
  detached(agent: string, child: string, runtimeGeneration: string): void {
    this.tally.detached++
    this.note(`${child} detaches from ${agent} (generation ${runtimeGeneration})`)
  }

  // ---------------------------------------------------------------------------
  // End of run
  // ---------------------------------------------------------------------------

  /** The final checks, once the world has settled. */
  finish(): void {
    for (const [stageId, stage] of this.stages) {
      for (const admit of stage.admits.values()) {
        if (!admit.beforeClose || stage.closeGeneration === undefined) continue
        const record = this.messages.get(admit.label)
        this.check(
          admit.settled === "refused" || (record?.ends.includes("stage") ?? false),
          "wf-lost-at-close",
          () => `${admit.label} was admitted by stage ${stageId} before its close and never reached the stage (it ended: ${record?.ends.join(", ") || "nowhere"})`
        )
      }
    }
    for (const record of this.messages.values()) {
      if (record.late) {
        const outcomes = record.ends.filter((end) => end === "post-mortem" || end === "reply-error").length
        this.check(
          outcomes === 1 && record.ends.length === 1,
          "wf-late-ask",
          () => `late ask ${record.label} to stage ${record.to} ended in ${record.ends.length === 0 ? "no outcome" : record.ends.join(" + ")}`
        )
        continue
      }
      this.check(record.ends.length > 0, "wf-lost", () => `${record.label} from ${record.from} to ${record.to} ended nowhere`)
      this.check(
        record.ends.length <= 1,
        "wf-duplicate",
        () => `${record.label} from ${record.from} to ${record.to} ended ${record.ends.length} times: ${record.ends.join(", ")}`
      )
    }
  }

  /** Where a message ended so far. */
  endsOf(label: string): ReadonlyArray<Destination> {
    return this.messages.get(label)?.ends ?? []
  }
}
