/**
 * Every migration of `<intercomDir>/intercom.db`, by `<id>_<name>` for
 * effect's `Migrator.fromRecord`. One file per migration; numbers are fixed
 * per concern (0001 mail, 0002 questions, 0003 results) and a migration is
 * never edited once released.
 */
import questions from "./0002_questions.ts"

/** The migrations, keyed `<id>_<name>`. */
export const migrations = {
  "0002_questions": questions
}
