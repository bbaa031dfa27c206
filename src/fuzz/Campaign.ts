/**
 * One fuzz campaign: a real broker (BrokerUnderTest.ts) attacked over real
 * Unix sockets by concurrent attackers (attacks/catalogue.ts) while healthy
 * sessions (HealthyTraffic.ts) keep working and a probe times `health`
 * (HealthProbe.ts). Then the attackers leave and the campaign checks what
 * they left behind: the healthy sessions' losses, the broker's open
 * connections, its memory after two forced GCs, its log, and whether it is
 * still alive.
 *
 * Replay: attacker `i` draws its attacks from `Prng.derive(seed,
 * "attacker-i")` and each run's parameters from `attacker-i/run-k`, within
 * its own share of the frame and byte budgets, so a seed replays the same
 * attacks with the same parameters. What cannot replay exactly is timing:
 * when the broker answers, which healthy message ids are recent when an
 * attack borrows one, how the fibers interleave.
 */
import { Clock, Duration, Effect, Fiber, FiberSet, Option, Schedule } from "effect"
import { Prng } from "../testing/Prng.ts"
import { ATTACKS, type AttackSpec, selectAttacks } from "./attacks/catalogue.ts"
import { type AttackerBudget, makeKit } from "./attacks/kit.ts"
import { FORGED_LOG_LINE } from "./attacks/logInjection.ts"
import { awaitConnectionsAtMost, type BrokerMode, type BrokerTrouble, type MemorySample, startBroker } from "./BrokerUnderTest.ts"
import { type FindingKind, Findings } from "./Findings.ts"
import { makeHealthyTraffic } from "./HealthyTraffic.ts"
import { PROBE_INTERVAL, probeForever, probeOnce } from "./HealthProbe.ts"
import { type BrokerPromises, PROMISES, retainedBound } from "./promises.ts"
import { type KindTally, Tally } from "./Tally.ts"

/** What a campaign does. */
export interface CampaignOptions {
  readonly seed: number
  /** Frames the attackers send in all (a connection that sends none counts as one). */
  readonly frames: number
  /** Bytes the attackers send in all; default 2 KiB a frame. */
  readonly bytes?: number
  /** Attackers running at once; default 8. */
  readonly attackers?: number
  /** Where the broker runs; default `process` (memory is measured only there). */
  readonly mode?: BrokerMode
  /** Modules the broker process preloads besides the GC hook (a test's fault hook); none by default. */
  readonly brokerImports?: ReadonlyArray<string>
  /** Only these attack kinds or categories (default: all). */
  readonly only?: ReadonlyArray<string>
  /** Light floods instead of full-size ones (see `AttackKit.heavy`); default false. */
  readonly light?: boolean
  /** The bounds to hold the broker to; default `PROMISES`. */
  readonly promises?: BrokerPromises
  /** Findings that do not fail the campaign (the known ones, while their fixes are pending). */
  readonly tolerate?: ReadonlyArray<FindingKind>
  /**
   * Stop the attack phase after this long (ms) even if frames are left: the
   * attackers finish their current run, then the campaign ends as usual.
   */
  readonly maxAttackMs?: number
  /** The campaign's time bounds (default `CAMPAIGN_TIMEOUTS`); a test of a hung broker shortens them. */
  readonly timeouts?: Partial<CampaignTimeouts>
  /** Called with a progress line as the attack phase starts (naming the broker process), then every 5 s. */
  readonly progress?: (line: string) => Effect.Effect<void>
}

/** How long a campaign waits on the broker, in ms. */
export interface CampaignTimeouts {
  /** One attack run, before it is cut short (its connections closed). */
  readonly runLimitMs: number
  /**
   * The health probe without an answer, while the broker process is alive,
   * before the broker counts as hung (`broker-hung`): the attack phase ends
   * there, and the checks that need the broker to answer are skipped.
   */
  readonly hungAfterMs: number
  /**
   * The healthy sessions' finish after the attack phase: their traffic
   * stopped and three rounds of round trips answered. Not all answered in
   * time, while the broker process is alive, is `broker-hung`, and the
   * checks after it (losses, connections, memory, the final probe) are skipped.
   */
  readonly finalRoundTripsMs: number
  /** The broker process's memory report (after SIGUSR2 and two GCs); none in time is `broker-hung`. */
  readonly memoryReportMs: number
}

/** The bounds `npm run fuzz` and the CI campaign use. */
export const CAMPAIGN_TIMEOUTS: CampaignTimeouts = {
  runLimitMs: 15_000,
  hungAfterMs: 30_000,
  finalRoundTripsMs: 30_000,
  memoryReportMs: 30_000
}

/** Each timeout and its command-line flag (`npm run fuzz -- --hung-after-ms 5000`), for parsing and replay lines. */
export const TIMEOUT_FLAGS: ReadonlyArray<readonly [keyof CampaignTimeouts, string]> = [
  ["runLimitMs", "run-limit-ms"],
  ["hungAfterMs", "hung-after-ms"],
  ["finalRoundTripsMs", "final-round-trips-ms"],
  ["memoryReportMs", "memory-report-ms"]
]

/** What a campaign found and measured. */
export interface CampaignReport {
  readonly seed: number
  /** No finding apart from tolerated kinds. */
  readonly ok: boolean
  readonly findings: ReadonlyArray<{ readonly kind: FindingKind; readonly count: number; readonly examples: ReadonlyArray<string>; readonly tolerated: boolean }>
  readonly mode: BrokerMode
  readonly attackers: number
  readonly framesSent: number
  readonly bytesSent: number
  readonly byKind: ReadonlyArray<readonly [string, KindTally]>
  readonly connections: number
  readonly dialFailures: number
  readonly probes: number
  readonly worstHealthMs: number
  readonly lateProbes: number
  readonly maxFrameBytes: number
  readonly maxFrameWhere: string
  readonly memory: {
    readonly before: MemorySample | undefined
    readonly peakRss: number | undefined
    readonly after: MemorySample | undefined
  }
  readonly healthyExchanges: number
  /** How long the attack phase took, and the whole campaign (ms). */
  readonly attackMs: number
  readonly durationMs: number
  /** The command line that replays this campaign. */
  readonly replay: string
}

/** Background attack work (slow drips, held records, a session that does not read) running at once, at most. */
const BACKGROUND_LIMIT = 16

/** How long background work may take (a drip is bounded by the partial-frame bound anyway). */
const BACKGROUND_TIMEOUT = Duration.seconds(20)

/** Lines of a dead or hung broker's log its finding quotes. */
const LAST_LOG_LINES = 3

/** The command line that replays a campaign. */
export const replayCommand = (options: CampaignOptions): string =>
  [
    "npm run fuzz --",
    `--seed ${options.seed}`,
    `--frames ${options.frames}`,
    ...(options.bytes === undefined ? [] : [`--bytes ${options.bytes}`]),
    ...(options.attackers === undefined ? [] : [`--attackers ${options.attackers}`]),
    ...(options.mode === "in-process" ? ["--in-process"] : []),
    ...(options.light === true ? ["--light"] : []),
    ...(options.only === undefined || options.only.length === 0 ? [] : [`--only ${options.only.join(",")}`]),
    ...(options.maxAttackMs === undefined ? [] : [`--minutes ${options.maxAttackMs / 60_000}`]),
    // Timeouts change the verdict (a slow broker found hung or not): a run's replay keeps those it set.
    ...timeoutArgs(options.timeouts),
    // The verdict replays too: what the run tolerated, its replay tolerates.
    ...(options.tolerate === undefined || options.tolerate.length === 0 ? [] : [`--tolerate ${options.tolerate.join(",")}`])
  ].join(" ")

const timeoutArgs = (timeouts: Partial<CampaignTimeouts> | undefined): ReadonlyArray<string> =>
  TIMEOUT_FLAGS.flatMap(([key, flag]) => {
    const value = timeouts?.[key]
    return value === undefined ? [] : [`--${flag} ${value}`]
  })

/** Splits `total` into `parts` shares that differ by at most one. */
const share = (total: number, parts: number, i: number): number =>
  Math.floor(total / parts) + (i < total % parts ? 1 : 0)

/** Runs one campaign against a fresh broker. */
export const runCampaign = (options: CampaignOptions): Effect.Effect<CampaignReport, BrokerTrouble> =>
  Effect.scoped(Effect.gen(function*() {
    const seed = options.seed
    const promises = options.promises ?? PROMISES
    const attackers = Math.max(1, options.attackers ?? 8)
    const totalBytes = options.bytes ?? options.frames * 2048
    const mode = options.mode ?? "process"
    const { attacks } = selectAttacks(options.only ?? [])
    const weights: Record<string, number> = {}
    for (const attack of attacks.length === 0 ? ATTACKS : attacks) weights[attack.kind] = attack.weight
    const specs = new Map<string, AttackSpec>(ATTACKS.map((attack) => [attack.kind, attack]))
    const findings = new Findings()
    const tally = new Tally()
    const timeouts = { ...CAMPAIGN_TIMEOUTS, ...options.timeouts }
    const started = yield* Clock.currentTimeMillis

    const broker = yield* startBroker(mode, { memoryReport: Duration.millis(timeouts.memoryReportMs), imports: options.brokerImports ?? [] })
    const brokerName = mode === "process" ? `the broker process ${broker.pid}` : "the in-process broker"
    const logEnd = () => {
      const last = broker.logLines().slice(-LAST_LOG_LINES).map((line) => line.slice(0, 90))
      return last.length === 0 ? "" : `; the end of its log: ${last.join(" ⏎ ")}`
    }
    // Set once the broker is found alive but silent: what would wait on its answers is skipped from then on.
    let hung = false
    // A broker that died has no memory to sample: its death is the finding (below), not a failure of the
    // campaign. One alive that does not report is hung: that is a finding too, and the summary still comes.
    const sampleMemory = broker.memory.pipe(
      Effect.catchTag("BrokerTrouble", (trouble) =>
        Effect.sync(() => {
          if (broker.died() === undefined) {
            hung = true
            findings.add("broker-hung", `${brokerName} is alive but sent no memory report: ${trouble.detail}${logEnd()}`)
          }
          return undefined
        }))
    )
    // Sockets the broker holds before anyone connects (a process's stdio pipes are sockets too).
    const idle = yield* broker.connections
    const healthy = yield* makeHealthyTraffic({
      socketPath: broker.socketPath,
      scopeId: `fuzz-${seed}`,
      prefix: `fuzz-${seed}`,
      prng: Prng.derive(seed, "healthy"),
      findings,
      tally
    })
    yield* healthy.start
    const before = yield* sampleMemory
    yield* healthy.run

    // When the probe last had an answer (or the attack phase began): the hung-broker watch reads it.
    let lastAnswer = yield* Clock.currentTimeMillis
    const probeOptions = { socketPath: broker.socketPath, deadlineMs: promises.healthDeadlineMs, findings, tally, label: "probe" }
    const probe = yield* Effect.forkScoped(probeForever({ ...probeOptions, onAnswer: (at) => void (lastAnswer = at) }))
    const background = yield* FiberSet.make<void>()
    if (options.progress !== undefined) {
      const report = options.progress
      yield* Effect.forkScoped(
        Effect.suspend(() =>
          report(
            `${tally.frames}/${options.frames} frames, ${(tally.bytes / 1048576).toFixed(0)} MiB, ${tally.connections} connections, worst health ${tally.worstHealthMs} ms, ${healthy.exchanges()} healthy exchanges`
          )
        ).pipe(Effect.repeat(Schedule.spaced("5 seconds")), Effect.delay("5 seconds"))
      )
    }

    const attackStarted = yield* Clock.currentTimeMillis
    if (options.progress !== undefined) {
      yield* options.progress(`attack phase started against ${brokerName}`)
    }
    const attacker = (i: number) =>
      Effect.gen(function*() {
        const draw = Prng.derive(seed, `attacker-${i}`)
        const frames = share(options.frames, attackers, i)
        const budget: AttackerBudget = { frames, spentBytes: 0, totalFrames: frames, totalBytes: share(totalBytes, attackers, i) }
        for (let run = 0; budget.frames > 0; run++) {
          if (options.maxAttackMs !== undefined && (yield* Clock.currentTimeMillis) - attackStarted >= options.maxAttackMs) return
          // A dead broker ends the attack phase: the rest of the budget would only dial a missing socket.
          if (broker.died() !== undefined) return
          const kind = draw.weighted(weights)
          const spec = specs.get(kind)
          if (spec === undefined) return
          const framesBefore = budget.frames
          const runStarted = yield* Clock.currentTimeMillis
          const kit = makeKit({
            kind,
            prng: Prng.derive(seed, `attacker-${i}/run-${run}`),
            tag: `x${seed}-${i}-${run}`,
            socketPath: broker.socketPath,
            heavy: options.light !== true,
            view: healthy.view,
            promises,
            findings,
            tally,
            budget,
            background: (work) =>
              FiberSet.size(background).pipe(
                Effect.flatMap((running) =>
                  running >= BACKGROUND_LIMIT
                    ? Effect.void
                    : Effect.asVoid(FiberSet.run(background, Effect.scoped(work).pipe(Effect.timeoutOption(BACKGROUND_TIMEOUT))))
                )
              )
          })
          yield* Effect.scoped(spec.run(kit)).pipe(Effect.timeoutOption(Duration.millis(timeouts.runLimitMs)))
          tally.ran(kind, (yield* Clock.currentTimeMillis) - runStarted)
          // A run that could send nothing (refused, out of bytes) still costs a frame.
          if (budget.frames === framesBefore) budget.frames--
        }
      })

    // Alive but silent past the bound: how long it has been silent (a dead broker is left to the attackers' own check).
    const silentFor = Effect.gen(function*() {
      const silent = (yield* Clock.currentTimeMillis) - lastAnswer
      return broker.died() === undefined && silent >= timeouts.hungAfterMs ? Option.some(silent) : Option.none<number>()
    })
    const hungWatch = silentFor.pipe(
      Effect.repeat({ schedule: Schedule.spaced(PROBE_INTERVAL), until: Option.isSome }),
      Effect.map(Option.getOrElse(() => 0))
    )
    const attackPhase = Effect.forEach(Array.from({ length: attackers }, (_, i) => i), attacker, { concurrency: "unbounded", discard: true })
    // A hung broker ends the attack phase: every run left would wait out its run limit on a broker that does not read.
    const silence = yield* Effect.raceFirst(Effect.as(attackPhase, Option.none<number>()), Effect.map(hungWatch, Option.some))
    if (Option.isSome(silence)) {
      hung = true
      // The probe still waiting is interrupted below: it counts, unanswered, for as long as the broker was silent.
      tally.probed(silence.value, true)
      findings.add(
        "broker-hung",
        `${brokerName} is alive but answered no health probe for ${(silence.value / 1000).toFixed(1)} s (bound ${
          (timeouts.hungAfterMs / 1000).toFixed(1)
        } s)${logEnd()}`
      )
    }
    // Background work (a slow drip still inside its bound, a held record) ends with the attack phase.
    yield* FiberSet.clear(background)
    const attackMs = (yield* Clock.currentTimeMillis) - attackStarted
    yield* Fiber.interrupt(probe)
    if (options.progress !== undefined) {
      yield* options.progress(`attack phase ended after ${(attackMs / 1000).toFixed(1)} s: the healthy sessions' final round trips`)
    }
    // A hung broker would answer none of what follows: the healthy sessions' last round trips, letting go of
    // connections, a memory report, a final probe. Each would only wait out its timeout; the finding says it all.
    // One that hangs now is found by the round trips' own bound, not minutes later by the memory report's.
    if (!hung && !(yield* healthy.finish(Duration.millis(timeouts.finalRoundTripsMs))) && broker.died() === undefined) {
      hung = true
      findings.add(
        "broker-hung",
        `${brokerName} is alive but did not answer the healthy sessions' final round trips within ${
          (timeouts.finalRoundTripsMs / 1000).toFixed(1)
        } s${logEnd()}`
      )
    }

    // The attackers have closed every socket; the broker must let go of them (the healthy three remain).
    const released = hung || (yield* awaitConnectionsAtMost(broker, idle + 3, "15 seconds"))
    if (!released) {
      findings.add("connections-kept", `the broker still holds ${yield* broker.connections} connections after every attacker closed its sockets`)
    }
    const after = hung ? undefined : yield* sampleMemory
    const peakRss = yield* broker.peakRss
    if (before !== undefined && after !== undefined) {
      // What the broker still holds is its heap after two full GCs: RSS does not shrink back (V8 and
      // malloc keep pages they freed), so it measures the peak, not what is still referenced.
      // The bound grows with the frames sent, as the records they leave do until their budgets fill.
      const retained = after.heap - before.heap
      const bound = retainedBound(promises, tally.frames)
      findings.check(retained <= bound, "memory-retained", () =>
        `${mib(after.heap)} of heap after the attackers left and two GCs, ${mib(retained)} above the ${mib(before.heap)} before (bound ${
          mib(bound)
        } for ${tally.frames} frames)`)
    }
    for (const line of broker.logLines()) {
      if (line.startsWith(FORGED_LOG_LINE)) findings.add("log-injection", `the broker's log has a forged line: ${line.slice(0, 160)}`)
    }
    // Still alive and answering, after everything.
    if (!hung) yield* probeOnce({ ...probeOptions, label: "final probe" })
    const died = broker.died()
    if (died !== undefined) findings.add("broker-crashed", `the broker ${died}${logEnd()}`)

    const tolerate = new Set(options.tolerate ?? [])
    const summary = findings.summary().map((entry) => ({ ...entry, tolerated: tolerate.has(entry.kind) }))
    return {
      seed,
      ok: summary.every((entry) => entry.tolerated),
      findings: summary,
      mode,
      attackers,
      framesSent: tally.frames,
      bytesSent: tally.bytes,
      byKind: [...tally.byKind.entries()].sort(([a], [b]) => a.localeCompare(b)),
      connections: tally.connections,
      dialFailures: tally.dialFailures,
      probes: tally.probes,
      worstHealthMs: tally.worstHealthMs,
      lateProbes: tally.lateProbes,
      maxFrameBytes: tally.maxFrameBytes,
      maxFrameWhere: tally.maxFrameWhere,
      memory: { before, peakRss, after },
      healthyExchanges: healthy.exchanges(),
      attackMs,
      durationMs: (yield* Clock.currentTimeMillis) - started,
      replay: replayCommand(options)
    } satisfies CampaignReport
  }))

const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MiB`
