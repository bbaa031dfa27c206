/**
 * The base tree of `bench/ab.ts`: a commit exported and built once under
 * `$TMPDIR/intercom-ab/<sha>`, safely when two A/B runs ask for the same
 * base at once.
 *
 * Each run builds in a directory of its own beside the tree
 * (`<sha>.building-XXXXXX`) and renames it into place only once it is built:
 * a rename is atomic, so the tree is either missing or whole, and a run
 * never removes or writes into a tree another run is building or measuring.
 * When two runs build the same base, the first rename wins and the other
 * run discards its own build and uses the winner's.
 */
import fs from "node:fs"
import path from "node:path"
import { BUNDLED_CLI } from "../src/config/install.ts"

/** Whether `root` holds a built tree (`dist/bin/intercom.mjs`). */
export const isBuilt = (root: string): boolean => fs.existsSync(path.join(root, BUNDLED_CLI))

/**
 * `tree`, built: as it is when it already holds a build, else built by
 * `build` into a fresh directory of this run's beside it and renamed into
 * place. Throws when `build` does or leaves no build (its directory is
 * removed then), and when `tree` holds something unbuilt: builds only ever
 * arrive there whole, so that is a leftover (an export whose build failed,
 * from before builds were renamed into place) which only its owner may
 * remove — removing it here could race another run's rename.
 */
export const buildOnce = (tree: string, build: (dir: string) => void): string => {
  if (isBuilt(tree)) return tree
  fs.mkdirSync(path.dirname(tree), { recursive: true })
  const work = fs.mkdtempSync(`${tree}.building-`)
  try {
    build(work)
    if (!isBuilt(work)) throw new Error(`the build in ${work} left no ${BUNDLED_CLI}`)
    try {
      fs.renameSync(work, tree)
    } catch (error) {
      // Another run's build got there first: use it.
      if (isBuilt(tree)) return tree
      throw new Error(
        `${tree} holds no build (${error instanceof Error ? error.message : String(error)}): a leftover of a failed build? Remove it and run again`
      )
    }
    return tree
  } finally {
    // Renamed into place, it is gone from here; else this run's build is not needed.
    fs.rmSync(work, { recursive: true, force: true })
  }
}
