/**
 * C-TOOL-16: project scope — same cwd, or the same Git repository through
 * its common Git directory (worktrees count); other projects are hidden from
 * `list` / `status` unless `scope: "all"`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { inScope, projectKey } from "../../src/session/project.ts"
import { hiddenNote, renderSessionList } from "../../src/session/render.ts"

const info = (id: string, cwd: string): SessionInfo => ({ id, cwd, model: "m", pid: 1, startedAt: 0, lastActivity: 0, name: id })

describe("C-TOOL-16 project scope", () => {
  it("a worktree and a subdirectory of one repository are one project; another directory is not", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "eiscope-"))
    try {
      const repo = path.join(root, "repo")
      fs.mkdirSync(path.join(repo, ".git", "worktrees", "wt"), { recursive: true })
      fs.mkdirSync(path.join(repo, "src"))
      fs.writeFileSync(path.join(repo, ".git", "worktrees", "wt", "commondir"), "../..\n")
      const worktree = path.join(root, "wt")
      fs.mkdirSync(worktree)
      fs.writeFileSync(path.join(worktree, ".git"), `gitdir: ${path.join(repo, ".git", "worktrees", "wt")}\n`)
      const elsewhere = path.join(root, "elsewhere")
      fs.mkdirSync(elsewhere)

      assert.strictEqual(projectKey(path.join(repo, "src")), projectKey(worktree))
      assert.notStrictEqual(projectKey(elsewhere), projectKey(repo))

      const self = info("self", path.join(repo, "src"))
      const sessions = [self, info("wt", worktree), info("other", elsewhere), info("same", self.cwd)]
      assert.deepStrictEqual(inScope("project", self, sessions).map((s) => s.id), ["self", "wt", "same"])
      assert.deepStrictEqual(inScope("all", self, sessions).map((s) => s.id), ["self", "wt", "other", "same"])
      const text = renderSessionList(self, sessions, inScope("project", self, sessions))
      assert.notInclude(text, elsewhere)
      assert.isTrue(text.endsWith(hiddenNote(1)))
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
