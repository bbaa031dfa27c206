/**
 * "Did you mean …?" for a mistyped word: the candidates closest to it by edit
 * distance. Used where effect/cli cannot suggest itself, such as
 * `intercom broker stopp`, whose word reaches the ignored `<broker-script>`
 * argument rather than the subcommand parser (commands.ts).
 */

/** Edit distance (insertions, deletions, substitutions) between `a` and `b`. */
const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/**
 * The candidates within edit distance 2 of `word` (compared in lower case),
 * nearest first; empty when none is that close.
 */
export const closestWords = (word: string, candidates: ReadonlyArray<string>): ReadonlyArray<string> =>
  candidates
    .map((candidate) => ({ candidate, distance: editDistance(word.toLowerCase(), candidate) }))
    .filter(({ distance }) => distance <= 2)
    .sort((x, y) => x.distance - y.distance)
    .map(({ candidate }) => candidate)
