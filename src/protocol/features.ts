/**
 * Feature negotiation. `registered.features` lists what this broker offers.
 * Base features are always advertised (a pi-intercom client understands them);
 * extensions are granted only to a client that asked for them by name in
 * `register.features`, so a strict base client never sees a frame type or
 * field it would reject (P04).
 */

/** Epoch-bound exact sends (P47). Understood by pi-intercom clients. */
export const EXACT_SEND_V1 = "exact-send-v1"

/** Features every client receives in `registered`. */
export const BASE_FEATURES: ReadonlyArray<string> = [EXACT_SEND_V1]

/** Extensions a client may request; later issues add to this list. */
export const EXTENSION_FEATURES: ReadonlyArray<string> = []

/** The features to grant: base ones plus the requested extensions this broker knows. */
export const negotiateFeatures = (requested: ReadonlyArray<string> | undefined): ReadonlyArray<string> => {
  if (requested === undefined || requested.length === 0) return BASE_FEATURES
  const granted = requested.filter((feature) => EXTENSION_FEATURES.includes(feature))
  return granted.length === 0 ? BASE_FEATURES : [...BASE_FEATURES, ...new Set(granted)]
}
