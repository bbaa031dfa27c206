/**
 * bench:profile's side-by-side table of functions: for one workload, the
 * union of each target's largest functions by self samples, with every
 * target's sample count beside its µs per unit, so a per-function
 * comparison between the relay and ours shows how many samples each figure
 * rests on. Owns only that table (bench/profile.ts prints it).
 */
import type { Column } from "./profile-split.ts"
import { topEntries } from "./profile-split.ts"

type Entry = ReturnType<typeof topEntries>[number]

/** A cell resting on fewer samples than this is counting noise (±15 % or more): marked `~`. */
export const NOISE_SAMPLES = 50

/** A function's name as printed: a path's directories dropped (the relay's script lives in a temp dir). */
const shortName = (key: string): string => {
  const space = key.indexOf(" ")
  const loc = space < 0 ? key : key.slice(0, space)
  const slash = loc.lastIndexOf("/")
  return slash < 0 || loc.startsWith("src/") ? key : key.slice(slash + 1)
}

/**
 * The table: one row per function among any column's `n` largest (by self
 * samples, idle left out), ordered by the largest µs per unit in any column;
 * per column "samples / µs", `~` before a count under `NOISE_SAMPLES`, `–`
 * where that target has no sample of the function.
 */
export const functionsSideBySide = (
  columns: ReadonlyArray<Column>,
  n: number
): { readonly header: ReadonlyArray<string>; readonly rows: ReadonlyArray<ReadonlyArray<string>> } => {
  const all = columns.map((c) => topEntries(c.measured, "byFunction", Number.MAX_SAFE_INTEGER))
  const keys = new Set<string>()
  for (const entries of all) for (const e of entries.slice(0, n)) keys.add(e.name)
  const cell = (entries: ReadonlyArray<Entry>, key: string): Entry | undefined => entries.find((e) => e.name === key)
  const largest = (key: string): number => Math.max(...all.map((entries) => cell(entries, key)?.usPerUnit ?? 0))
  const owner = (key: string): string => all.map((entries) => cell(entries, key)?.owner).find((o) => o !== undefined) ?? ""
  const rows = [...keys]
    .sort((a, b) => largest(b) - largest(a))
    .map((key) => [
      shortName(key),
      owner(key),
      ...all.map((entries) => {
        const e = cell(entries, key)
        if (e === undefined) return "–"
        return `${e.samples < NOISE_SAMPLES ? "~" : ""}${e.samples} / ${e.usPerUnit.toFixed(2)}`
      })
    ])
  return { header: ["function", "owner", ...columns.map((c) => `${c.label}: samples / µs`)], rows }
}
