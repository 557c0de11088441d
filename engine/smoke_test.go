package engine_test

import (
	"testing"

	"github.com/crw-dev/crw/engine/enginetest"
)

func TestSmoke(t *testing.T) {
	res, rows := enginetest.Run(t, `
import { agent } from "crw:agent";
export default async function main() {
  "use strict";
  const r = await agent.call({ role: "architect", prompt: "hi", schema: {type:"object", additionalProperties:false, required:["a"], properties:{a:{type:"string"}}} });
  let threw = null;
  try { r.status = "x"; } catch (e) { threw = String(e); }
  return { r, threw, keys: Object.keys(r) };
}`, "")
	t.Logf("%+v %s", res, res.Result)
	for _, r := range rows {
		t.Logf("%+v", r)
	}
}
