/** Small statistics helpers: medians and nearest-rank percentiles. */

const finite = (xs: ReadonlyArray<number>): Array<number> => xs.filter((x) => Number.isFinite(x))

export const median = (xs: ReadonlyArray<number>): number => {
  const s = finite(xs).sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const mid = s.length >> 1
  const hi = s[mid] ?? Number.NaN
  return s.length % 2 === 1 ? hi : ((s[mid - 1] ?? Number.NaN) + hi) / 2
}

/** Nearest-rank percentile of an already sorted array, p in [0, 100]. */
export const percentileSorted = (sorted: ReadonlyArray<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] ?? Number.NaN
}

export const sortedCopy = (xs: ReadonlyArray<number>): Array<number> => finite(xs).sort((a, b) => a - b)

export const mean = (xs: ReadonlyArray<number>): number => {
  const f = finite(xs)
  return f.length === 0 ? Number.NaN : f.reduce((a, b) => a + b, 0) / f.length
}

export const minOf = (xs: ReadonlyArray<number>): number => {
  const f = finite(xs)
  return f.length === 0 ? Number.NaN : Math.min(...f)
}

export const maxOf = (xs: ReadonlyArray<number>): number => {
  const f = finite(xs)
  return f.length === 0 ? Number.NaN : Math.max(...f)
}
