/**
 * The QuestionStore layers every store test runs against, by name.
 */
import type { Layer } from "effect"
import { layerMemory, type QuestionStore } from "../../src/store/QuestionStore.ts"

/** `[name, layer]` pairs: a fresh store per test. */
export const storeLayers = (): ReadonlyArray<readonly [string, Layer.Layer<QuestionStore>]> => [["memory", layerMemory]]
