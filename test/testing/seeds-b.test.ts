import { describe } from "@effect/vitest"
import { sweep } from "./sweep.ts"

describe("simulation sweep (part 2 of 2)", () => {
  sweep(251, 125)
  sweep(376, 125)
})
