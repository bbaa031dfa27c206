/**
 * The SQLite `QuestionStore` of a broker process: over the database file
 * `<intercomDir>/intercom.db` (opened 0600 and migrated by `Database`). A
 * database that cannot be opened fails the broker's start with an error
 * naming the file and what to do (`StoreOpenError`), never an empty store.
 */
import { Layer } from "effect"
import * as path from "node:path"
import * as Database from "./Database.ts"
import type { StoreOpenError } from "./errors.ts"
import { layerSql, type QuestionStore } from "./QuestionStore.ts"

/** The broker's database file name in its intercom directory. */
export const QUESTIONS_DATABASE_FILE = "intercom.db"

/**
 * The question store over `<intercomDir>/intercom.db`.
 *
 * @category layers
 * @since 0.1.0
 */
export const questionStoreLayer = (intercomDir: string): Layer.Layer<QuestionStore, StoreOpenError> =>
  layerSql.pipe(Layer.provide(Database.layer({ file: path.join(intercomDir, QUESTIONS_DATABASE_FILE) })))
