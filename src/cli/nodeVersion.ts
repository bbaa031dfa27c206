/**
 * The oldest Node.js the `intercom` executable runs on, checked first thing
 * by main.ts. The broker keeps its lifetime lock and its store in
 * `node:sqlite`, and package.json's `engines` asks for 22.19; the executable
 * runs on whatever `node` the PATH gives (`#!/usr/bin/env node`, and `npm
 * link` keeps that), so on an older one a command would get part way — a
 * client spawning a broker that cannot start — before failing. This module
 * imports nothing: main.ts must stay small (see its header).
 */

/** The oldest Node.js supported: package.json `engines.node` (`>=22.19`). */
export const MIN_NODE = { major: 22, minor: 19 } as const

/**
 * Why `intercom` cannot run on Node.js `version` (`process.versions.node`,
 * e.g. `20.20.2`) — what it needs, which Node this is (`execPath`) and how
 * to get one — or undefined when it can.
 *
 * @example
 * ```ts
 * nodeVersionProblem("24.21.0", "/usr/bin/node") // undefined
 * nodeVersionProblem("20.20.2", "/usr/bin/node") // "intercom needs Node.js 22.19 or newer …"
 * ```
 */
export const nodeVersionProblem = (version: string, execPath: string): string | undefined => {
  const [major = 0, minor = 0] = version.split(".").map(Number)
  if (major > MIN_NODE.major || (major === MIN_NODE.major && minor >= MIN_NODE.minor)) return undefined
  const needed = `${MIN_NODE.major}.${MIN_NODE.minor}`
  return `intercom needs Node.js ${needed} or newer (its broker keeps its state in node:sqlite); this is Node.js ${version} (${execPath}). ` +
    `Install Node.js ${needed} or newer (a version manager does it for your user: nvm install 22, fnm install 22) and put it first on the PATH, ` +
    `or run intercom with it: /path/to/node $(command -v intercom) <command>. In a checkout of effect-intercom, npm install brings one: node_modules/.bin/node dist/bin/intercom.mjs <command>.`
}
