/**
 * The world a generated workload runs in: its sessions (names, groups with
 * a supervisor and its child, the ephemeral one), the seed's variations of
 * the world, and the config that puts them together with the broker limits
 * pressure and the parked-flush ops need.
 */
import { Prng } from "../Prng.ts"
import { PARKED_FLUSH_OUTBOX_CHARS } from "../simulation/parkedFlush.ts"
import { pressureBroker } from "../simulation/pressure.ts"
import type { SessionSpec, SimulationConfig } from "../Simulation.ts"
import type { WorkloadOptions } from "./options.ts"

/**
 * In a workload with `unregister`: the index of the ephemeral session, the
 * last one (D of four), or none when that is the supervisor or the delegated
 * child of a workload with groups (their registrations carry grants that a
 * one-shot session has no use for) or the world has fewer than three.
 */
export const ephemeralIndexOf = (sessions: number, groups = false): number | undefined => {
  const last = sessions - 1
  if (sessions < 3) return undefined
  return groups && (last === SUPERVISOR_INDEX || last === childIndexOf(sessions)) ? undefined : last
}

/** Hostile sessions in a world with `WorkloadOptions.hostile`. */
export const HOSTILE_SESSIONS = 2

/** In a workload with groups: the supervisor's index (A). */
export const SUPERVISOR_INDEX = 0

/** In a workload with groups: the delegated child's index (C, or B in a world of two). */
export const childIndexOf = (sessions: number): number => sessions >= 3 ? 2 : 1

/**
 * The group of session `index` in a workload with groups: pairs alternate
 * (A, B `default`; C, D `run-1`; E, F `default`; …), so that sessions handed
 * two scopes round-robin still share a scope with a session of the other
 * group.
 */
export const groupOfIndex = (index: number): string => Math.floor(index / 2) % 2 === 0 ? "default" : "run-1"

/** The sessions of a workload with groups: A supervises the child (C), in the other group. */
export const groupSpecs = (count: number): ReadonlyArray<SessionSpec> =>
  sessionNames(count).map((name, index) => ({
    name,
    group: groupOfIndex(index),
    ...(count >= 2 && index === childIndexOf(count) ? { supervisor: sessionNames(count)[SUPERVISOR_INDEX] } : {})
  }))

/** The session count a workload needs; generated ops name sessions below it. */
export const sessionCountOf = (config: SimulationConfig, options: WorkloadOptions = {}): number =>
  config.sessions?.length ?? options.sessions ?? 4

/** Sessions named A, B, C, … for a generated workload. */
export const sessionNames = (count: number): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, i) => i < 26 ? String.fromCharCode(65 + i) : `S${i}`)

/** The world a seed varies into (see `WorkloadOptions.vary`); the config's own settings win. */
export const variedConfig = (config: SimulationConfig): SimulationConfig => {
  const prng = Prng.derive(config.seed, "world")
  const small = prng.chance(0.35)
  return {
    ...(prng.chance(0.3) ? { scopes: ["alpha", "beta"] } : {}),
    ...(small ? { linkCapacity: prng.pick([1, 2, 8]) } : {}),
    agent: {
      replyProbability: prng.pick([0.5, 0.85, 1]),
      replyDelayMs: [0, prng.pick([500, 3000, 12_000])],
      ...config.agent
    },
    ...config,
    broker: {
      ...(small ? { outboxCapacity: prng.pick([1, 4, 16]) } : {}),
      ...(prng.chance(0.25) ? { mailboxCapacity: prng.pick([1, 3, 8]) } : {}),
      ...config.broker
    }
  }
}

/**
 * The config a generated workload runs in: `count` sessions unless the config
 * names them (with `groups`, over two groups with a supervisor and its child:
 * `groupSpecs`; with `unregister`, the session at `ephemeralIndexOf`
 * ephemeral), varied by seed. `parkedFlush` and `heldReturn` (also given
 * for `settleHold`) make outboxes of PARKED_FLUSH_OUTBOX_CHARS characters
 * unless pressure made them smaller.
 */
export const workloadConfig = (
  config: SimulationConfig,
  count: number,
  vary = true,
  groups = false,
  pressure = true,
  unregister = false,
  parkedFlush = false,
  heldReturn = false
): SimulationConfig => {
  const specs: ReadonlyArray<string | SessionSpec> = groups && count >= 2 ? groupSpecs(count) : sessionNames(count)
  const ephemeral = unregister ? ephemeralIndexOf(count, groups && count >= 2) : undefined
  const named = config.sessions === undefined
    ? {
      ...config,
      sessions: ephemeral === undefined ? specs : specs.map((entry, index) => {
        const spec = typeof entry === "string" ? { name: entry } : entry
        return index === ephemeral ? { ...spec, ephemeral: true } : entry
      })
    }
    : config
  const varied = vary ? variedConfig(named) : named
  const pressed = pressure ? { ...varied, broker: { ...pressureBroker(config.seed), ...varied.broker } } : varied
  return (parkedFlush || heldReturn) && pressed.broker?.outboxChars === undefined
    ? { ...pressed, broker: { ...pressed.broker, outboxChars: PARKED_FLUSH_OUTBOX_CHARS } }
    : pressed
}
