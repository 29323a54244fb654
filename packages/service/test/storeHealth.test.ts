// The store's health state machine (src/store/health.ts): the outdated state (a newer version migrated the
// database under this replica) is for good, whatever answers or outages come after it.
import { expect } from "chai";
import { describeStoreState, StoreAvailability, type StoreState } from "../src/store/health.ts";
import { StoreUnavailableError, type StoreCause } from "../src/store/unavailable.ts";

describe("store health: the outdated state (schema_too_new)", () => {
  it("is red for good: no answer, no outage and no probe brings it back; counted once", async () => {
    const health = new StoreAvailability(10);
    const causes: StoreCause[] = [];
    const changes: StoreState[] = [];
    health.onFailure((cause) => causes.push(cause));
    health.onChange((now) => changes.push(now));
    let probes = 0;
    health.setProbe(async () => {
      probes++;
      health.answered(true);
    });
    try {
      health.outdated("a newer version migrated it");
      health.outdated("again");
      expect(health.state()).to.include({ up: false, scope: "writes", cause: "schema_too_new", detail: "a newer version migrated it" });
      expect(describeStoreState(health.state())).to.match(/^migrated by a newer version of the service \(schema_too_new\) since .*: this replica reserves nothing; upgrade it$/);
      health.answered(true);
      health.answered(false);
      health.failed(new StoreUnavailableError("refused", "connect ECONNREFUSED"));
      health.answered(true);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(health.state()).to.include({ up: false, cause: "schema_too_new" });
      expect(probes, "nothing probed").to.equal(0);
      expect(changes, "one change").to.have.length(1);
      expect(causes).to.deep.equal(["schema_too_new", "refused"]);
    } finally {
      health.close();
    }
  });

  it("an outage before it still heals by itself, then the outdated state takes over", async () => {
    const health = new StoreAvailability(10);
    try {
      health.failed(new StoreUnavailableError("refused", "connect ECONNREFUSED"));
      expect(health.state()).to.include({ up: false, scope: "all", cause: "refused" });
      health.answered(false);
      expect(health.state().up).to.equal(true);
      health.outdated("a newer version migrated it");
      expect(health.state()).to.include({ up: false, cause: "schema_too_new" });
    } finally {
      health.close();
    }
  });
});
