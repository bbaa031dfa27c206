/**
 * A small seeded pseudo-random generator (sfc32, seeded through splitmix32).
 * It generates the workload and agent decisions, and it is also provided as
 * Effect's `Random` service, so `Schedule.jittered` in the client's reconnect
 * backoff draws from the same seed: one seed, one run.
 *
 * No global state: each generator is its own object; `fork` derives an
 * independent stream (per agent, per purpose) so that removing one operation
 * while shrinking does not shift every later decision.
 */
import type { Random } from "effect"

const splitmix32 = (state: number): readonly [number, number] => {
  const next = (state + 0x9e3779b9) | 0
  let z = next
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
  z ^= z >>> 16
  return [next, z >>> 0]
}

/** A 32-bit hash of a string (FNV-1a), to turn labels into seeds. */
export const hashString = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * One seeded generator (sfc32). Also usable as Effect's `Random` service:
 * `Layer.succeed(Random.Random, new Prng(seed))`.
 *
 * @example
 * const chaos = Prng.derive(seed, "chaos") // its own stream: other draws do not shift it
 * const killAt = chaos.int(1_000, 30_000)
 * if (chaos.chance(0.5)) yield* sim.session("reviewer").kill
 */
export class Prng implements Random.Random {
  private a: number
  private b: number
  private c: number
  private d: number

  /** A generator for `seed` (a string is hashed first). The same seed gives the same stream. */
  constructor(seed: number | string) {
    let state = typeof seed === "number" ? seed | 0 : hashString(seed) | 0
    const words: Array<number> = []
    for (let i = 0; i < 4; i++) {
      const [next, value] = splitmix32(state)
      state = next
      words.push(value)
    }
    this.a = words[0] ?? 0
    this.b = words[1] ?? 0
    this.c = words[2] ?? 0
    this.d = words[3] ?? 1
    for (let i = 0; i < 12; i++) this.nextUint32()
  }

  /** An independent generator derived from this one's seed material and `label`. */
  static derive(seed: number | string, label: string): Prng {
    return new Prng(`${seed}/${label}`)
  }

  /** The next 32-bit unsigned integer. */
  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return t >>> 0
  }

  /** A number in [0, 1) (Effect `Random`). */
  nextDoubleUnsafe(): number {
    return this.nextUint32() / 4294967296
  }

  /** A safe integer (Effect `Random`). */
  nextIntUnsafe(): number {
    // A safe integer from two draws (53 bits), signed like Effect's default.
    const high = this.nextUint32() >>> 11
    const low = this.nextUint32()
    return (high * 4294967296 + low) - 2 ** 52
  }

  /** An integer in [min, max] (inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.nextDoubleUnsafe() * (max - min + 1))
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.nextDoubleUnsafe() < p
  }

  /** One of `items`, uniformly; throws on an empty list. */
  pick<A>(items: ReadonlyArray<A>): A {
    const item = items[Math.floor(this.nextDoubleUnsafe() * items.length)]
    if (item === undefined) throw new RangeError("Prng.pick from an empty list")
    return item
  }

  /** Picks a key by weight; weights of 0 are never picked. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries: Array<readonly [K, number]> = []
    let total = 0
    for (const key in weights) {
      const weight = weights[key]
      if (weight > 0) {
        entries.push([key, weight])
        total += weight
      }
    }
    let roll = this.nextDoubleUnsafe() * total
    for (const [key, weight] of entries) {
      roll -= weight
      if (roll < 0) return key
    }
    const last = entries[entries.length - 1]
    if (last === undefined) throw new RangeError("Prng.weighted with no positive weight")
    return last[0]
  }
}
