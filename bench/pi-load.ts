/**
 * One cold measurement for `bench/pi.ts`: how long pi's own resource loader
 * (jiti, as `pi -e` uses it) takes to load the extensions named on the
 * command line and run their factories. Prints milliseconds.
 *
 *   node bench/pi-load.ts <extension.js>...
 */
import { DefaultResourceLoader, SettingsManager } from "@earendil-works/pi-coding-agent"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "eipiload-"))
process.env["PI_CODING_AGENT_DIR"] = dir
const loader = new DefaultResourceLoader({
  cwd: dir,
  agentDir: dir,
  settingsManager: SettingsManager.inMemory(),
  additionalExtensionPaths: process.argv.slice(2).map((file) => path.resolve(file)),
  noSkills: true,
  noPromptTemplates: true,
  noThemes: true,
  noContextFiles: true
})
const start = performance.now()
await loader.reload()
const elapsed = performance.now() - start
const loaded = loader.getExtensions()
fs.rmSync(dir, { recursive: true, force: true })
if (loaded.errors.length > 0) throw new Error(JSON.stringify(loaded.errors))
console.log(elapsed.toFixed(1))
