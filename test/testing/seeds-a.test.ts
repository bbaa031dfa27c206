import { describe } from "@effect/vitest"
import { sweep } from "./sweep.ts"

describe("simulation sweep (part 1 of 2)", () => {
  sweep(1, 125)
  sweep(126, 125)
})
