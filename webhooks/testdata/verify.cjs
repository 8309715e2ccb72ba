// Verifies deliveries with the receivers' own libraries: npm standardwebhooks
// and stripe's webhooks.constructEvent. Run by node_test.go with NODE_PATH
// set to the node_modules that .ci/run installs. Reads a JSON list of
// {signing, secret, body, headers} from the file named by argv[2] and
// prints a JSON list of {ok, error}, one per delivery.
"use strict";
const fs = require("fs");
const { Webhook } = require("standardwebhooks");
const stripe = require("stripe")("sk_test_scenariomock");

const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = cases.map((c) => {
  try {
    if (c.signing === "standard") {
      new Webhook(c.secret).verify(c.body, c.headers);
    } else {
      stripe.webhooks.constructEvent(c.body, c.headers["stripe-signature"] || "", c.secret);
    }
    return { ok: true };
  } catch (e) {
    return { ok: false, error: String(e && e.message) };
  }
});
process.stdout.write(JSON.stringify(out));
