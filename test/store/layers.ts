/**
 * The QuestionStore layers every store test runs against, by name: the
 * memory layer, and the SQLite layer over a fresh in-memory database with
 * every migration (`Database.layerMemory`).
 */
import { Layer } from "effect"
import * as Database from "../../src/store/Database.ts"
import { layerMemory, layerSql, type QuestionStore } from "../../src/store/QuestionStore.ts"

/** The SQLite store over a fresh in-memory database (a failure to open it is a defect here). */
export const sqliteLayer: Layer.Layer<QuestionStore> = layerSql.pipe(Layer.provide(Layer.orDie(Database.layerMemory)))

/** `[name, layer]` pairs: a fresh store per test. */
export const storeLayers = (): ReadonlyArray<readonly [string, Layer.Layer<QuestionStore>]> => [
  ["memory", layerMemory],
  ["sqlite", sqliteLayer]
]
