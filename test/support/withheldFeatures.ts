/**
 * A client connection to a broker that does not offer some extensions: every `register` written through it asks
 * for none of them, so the real broker grants none of them, as one from before them would (P04: an extension is
 * granted only when asked for by name). It also keeps the features each `registered` it reads granted, for a test
 * to check its set-up against. Owns nothing past the connection it wraps.
 */
import { Effect } from "effect"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"

/** `frames` with each of `withheld` taken out of a `register`'s requested extensions; other frames as they are. */
const withoutFeatures = (frames: ReadonlyArray<OutFrame>, withheld: ReadonlyArray<string>): ReadonlyArray<OutFrame> =>
  withheld.length === 0 ? frames : frames.map((frame) => {
    const text = frameText(frame)
    if (!text.startsWith(`{"type":"register"`)) return frame
    const register: { readonly features?: ReadonlyArray<string> } = JSON.parse(text)
    return JSON.stringify({ ...register, features: (register.features ?? []).filter((name) => !withheld.includes(name)) })
  })

/** The `features` of a `registered` frame's text; undefined for any other frame. */
const grantedIn = (text: string): ReadonlyArray<string> | undefined => {
  if (!text.startsWith(`{"type":"registered"`)) return undefined
  const registered: { readonly features?: ReadonlyArray<string> } = JSON.parse(text)
  return registered.features ?? []
}

/**
 * `connection` whose `register` frames ask for none of `withheld` (none withheld: as it is) and whose reads push the
 * features of each `registered` onto `granted`, oldest first.
 *
 * @example
 * ```ts
 * const granted: Array<ReadonlyArray<string>> = []
 * const dial: Dialer = (address) => Effect.map(world.dial(address), (c) => withholding(c, [REUSE_REASON_V1], granted))
 * ```
 */
export const withholding = (
  connection: Connection,
  withheld: ReadonlyArray<string>,
  granted: Array<ReadonlyArray<string>>
): Connection => ({
  ...connection,
  read: Effect.tap(connection.read, (texts) =>
    Effect.sync(() => {
      for (const text of texts) {
        const features = grantedIn(text)
        if (features !== undefined) granted.push(features)
      }
    })),
  write: (frames) => connection.write(withoutFeatures(frames, withheld)),
  writeAll: (frames) => connection.writeAll(withoutFeatures(frames, withheld))
})
