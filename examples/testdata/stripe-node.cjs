// Drives the Stripe example with the official Node client (npm stripe),
// as an integration would: node stripe-node.cjs http://127.0.0.1:PORT.
// Each step asserts what it gets and prints "ok <step>"; the Go test
// (stripe_node_test.go) checks that every step printed its line.
'use strict';
const assert = require('node:assert/strict');
const Stripe = require('stripe');

const url = new URL(process.argv[2]);
const stripe = new Stripe('sk_test_node_' + process.pid, {
  host: url.hostname,
  port: Number(url.port),
  protocol: 'http',
  maxNetworkRetries: 2,
});

function ok(step) {
  console.log('ok ' + step);
}

async function rejects(promise, type) {
  try {
    await promise;
  } catch (err) {
    assert.equal(err.type, type, `${err.type}: ${err.message}`);
    return err;
  }
  assert.fail(`resolved, want a ${type}`);
}

async function customers() {
  const created = [];
  for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
    created.push(await stripe.customers.create({email, metadata: {source: 'node'}}));
  }
  const [first] = created;
  assert.match(first.id, /^cus_/);
  assert.equal(first.metadata.source, 'node');
  const got = await stripe.customers.retrieve(first.id);
  assert.equal(got.email, 'a@example.com');
  ok('customer created and retrieved');

  const updated = await stripe.customers.update(first.id, {name: 'Ada'});
  assert.equal(updated.name, 'Ada');
  assert.equal((await stripe.customers.retrieve(first.id)).name, 'Ada');
  ok('customer updated');

  const listed = [];
  for await (const c of stripe.customers.list({limit: 2})) {
    listed.push(c.id);
  }
  assert.deepEqual(listed, created.map((c) => c.id).reverse());
  ok('customers listed newest first, auto-paginated');

  const deleted = await stripe.customers.del(first.id);
  assert.equal(deleted.deleted, true);
  // Stripe still reads a deleted customer, as the deleted object; it
  // updates it no more.
  const gone = await stripe.customers.retrieve(first.id);
  assert.deepEqual({id: gone.id, object: gone.object, deleted: gone.deleted}, {id: first.id, object: 'customer', deleted: true});
  assert.equal(gone.email, undefined);
  const err = await rejects(stripe.customers.update(first.id, {name: 'x'}), 'StripeInvalidRequestError');
  assert.equal(err.statusCode, 404);
  assert.equal(err.code, 'resource_missing');
  ok('customer deleted');
}

async function paymentIntents() {
  const customer = await stripe.customers.create({email: 'payer@example.com'});
  const pi = await stripe.paymentIntents.create({amount: 2000, currency: 'usd', customer: customer.id, expand: ['customer']});
  assert.equal(pi.status, 'requires_payment_method');
  assert.equal(pi.amount, 2000);
  assert.equal(pi.customer.id, customer.id);
  assert.equal(pi.customer.email, 'payer@example.com');
  ok('payment intent created with expand[]=customer');

  const confirmed = await stripe.paymentIntents.confirm(pi.id, {payment_method: 'pm_card_visa'});
  assert.equal(confirmed.id, pi.id);
  assert.equal(confirmed.status, 'succeeded');
  assert.equal((await stripe.paymentIntents.retrieve(pi.id)).status, 'succeeded');
  ok('payment intent confirmed');

  const refund = await stripe.refunds.create({payment_intent: pi.id, amount: 1500});
  assert.match(refund.id, /^re_/);
  assert.equal(refund.payment_intent, pi.id);
  assert.equal(refund.amount, 1500);
  ok('payment intent refunded');

  // More than is left after that refund, and an intent that has not been
  // paid: Stripe's 400s naming the parameter, and no refund made.
  const tooMuch = await rejects(stripe.refunds.create({payment_intent: pi.id, amount: 501}), 'StripeInvalidRequestError');
  assert.equal(tooMuch.param, 'amount');
  assert.equal(tooMuch.raw.message, 'Refund amount (501 usd) is greater than unrefunded amount on charge (500 usd)');
  const unpaid = await stripe.paymentIntents.create({amount: 700, currency: 'usd'});
  const notPaid = await rejects(stripe.refunds.create({payment_intent: unpaid.id}), 'StripeInvalidRequestError');
  assert.equal(notPaid.param, 'payment_intent');
  assert.equal(notPaid.raw.message, `This PaymentIntent (${unpaid.id}) does not have a successful charge to refund.`);
  const refunds = [];
  for await (const r of stripe.refunds.list({payment_intent: pi.id})) {
    refunds.push(r.id);
  }
  assert.deepEqual(refunds, [refund.id]);
  ok('refunds of more than is left, or of an unpaid intent, refused');

  const other = await stripe.paymentIntents.create({amount: 500, currency: 'eur'});
  const canceled = await stripe.paymentIntents.cancel(other.id);
  assert.equal(canceled.status, 'canceled');
  assert.equal((await stripe.paymentIntents.retrieve(other.id)).status, 'canceled');
  ok('payment intent canceled');

  // Below the currency's minimum charge: Stripe's 400, and no intent; a
  // currency in upper case is kept lower case.
  const small = await rejects(stripe.paymentIntents.create({amount: 49, currency: 'usd'}), 'StripeInvalidRequestError');
  assert.deepEqual([small.statusCode, small.code, small.param, small.raw.message], [400, 'amount_too_small', 'amount', 'Amount must be at least $0.50 usd']);
  const yen = await rejects(stripe.paymentIntents.create({amount: 49, currency: 'jpy'}), 'StripeInvalidRequestError');
  assert.equal(yen.raw.message, 'Amount must be at least ¥50 jpy');
  const upper = await stripe.paymentIntents.create({amount: 500, currency: 'GBP'});
  assert.equal(upper.currency, 'gbp');
  assert.equal((await stripe.paymentIntents.retrieve(upper.id)).currency, 'gbp');
  ok('payment intent below the minimum refused, currency kept lower case');

  // A Checkout Session for a price: its total, no payment intent yet.
  const product = await stripe.products.create({name: 'Mug'});
  const price = await stripe.prices.create({product: product.id, unit_amount: 1250, currency: 'usd'});
  const session = await stripe.checkout.sessions.create({mode: 'payment', success_url: 'https://example.com/ok', line_items: [{price: price.id, quantity: 3}]});
  assert.deepEqual([session.amount_total, session.amount_subtotal, session.currency, session.payment_intent, session.status], [3750, 3750, 'usd', null, 'open']);
  assert.equal((await stripe.checkout.sessions.retrieve(session.id)).amount_total, 3750);
  ok('checkout session totals its price');

  // Several line items: summed, and listed in the order sent.
  const sticker = {price_data: {currency: 'usd', unit_amount: 250, product_data: {name: 'Sticker'}}, quantity: 4};
  const several = await stripe.checkout.sessions.create({mode: 'payment', success_url: 'https://example.com/ok', line_items: [{price: price.id, quantity: 2}, sticker]});
  assert.deepEqual([several.amount_total, several.amount_subtotal, several.currency], [3500, 3500, 'usd']);
  const lines = [];
  for await (const li of stripe.checkout.sessions.listLineItems(several.id, {limit: 1})) {
    lines.push([li.description, li.quantity, li.amount_total]);
  }
  assert.deepEqual(lines, [['Mug', 2, 2500], ['Sticker', 4, 1000]]);
  ok('checkout session of several line items totals and lists them');
}

async function idempotency() {
  const first = await stripe.customers.create({email: 'once@example.com'}, {idempotencyKey: 'node-key-' + process.pid});
  const again = await stripe.customers.create({email: 'once@example.com'}, {idempotencyKey: 'node-key-' + process.pid});
  assert.equal(again.id, first.id);
  assert.equal(again.lastResponse.headers['idempotent-replayed'], 'true');
  ok('retry with the same key replayed');

  await rejects(stripe.customers.create({email: 'other@example.com'}, {idempotencyKey: 'node-key-' + process.pid}), 'StripeIdempotencyError');
  ok('key reused with other parameters refused');

  // stripe-node sends a key longer than Stripe's 255 characters: Stripe's
  // 400, which it raises as a StripeInvalidRequestError.
  const long = await rejects(stripe.customers.create({email: 'long@example.com'}, {idempotencyKey: 'k'.repeat(300)}), 'StripeInvalidRequestError');
  assert.match(long.message, /Idempotent key length is 300, which is outside accepted lengths/);
  ok('key longer than 255 characters refused');

  // The server makes the customer and resets the connection; the client
  // retries with the same key and gets the answer.
  const lost = await stripe.customers.create({email: 'lost@example.com'}, {idempotencyKey: 'lost-node-' + process.pid});
  assert.equal(lost.email, 'lost@example.com');
  assert.equal(lost.lastResponse.headers['idempotent-replayed'], 'true');
  let count = 0;
  for await (const c of stripe.customers.list({limit: 100})) {
    if (c.email === 'lost@example.com') {
      count++;
    }
  }
  assert.equal(count, 1);
  ok('lost answer retried into one customer');
}

async function declines() {
  const err = await rejects(stripe.paymentIntents.create({amount: 2000, currency: 'usd', payment_method: 'pm_card_chargeDeclined', confirm: true}), 'StripeCardError');
  assert.equal(err.statusCode, 402);
  assert.equal(err.code, 'card_declined');
  assert.equal(err.decline_code, 'generic_decline');
  ok('declining test card raised a card error');

  // A payment method given at creation declines the confirm that sends none.
  const pending = await stripe.paymentIntents.create({amount: 2100, currency: 'usd', payment_method: 'pm_card_chargeDeclined'});
  assert.equal(pending.status, 'requires_confirmation');
  const later = await rejects(stripe.paymentIntents.confirm(pending.id), 'StripeCardError');
  assert.equal(later.statusCode, 402);
  assert.equal(later.code, 'card_declined');
  assert.equal(later.raw.param, null);
  assert.equal(later.payment_intent.id, pending.id);
  assert.equal(later.payment_intent.status, 'requires_payment_method');
  assert.equal(later.payment_intent.payment_method, null);
  ok('stored declining payment method declined a bare confirm');

  // The decline made a charge, failed, which the error and the intent name.
  assert.match(later.charge, /^ch_/);
  assert.equal(later.payment_intent.latest_charge, later.charge);
  assert.equal(later.payment_intent.last_payment_error.charge, later.charge);
  const charge = await stripe.charges.retrieve(later.charge);
  assert.equal(charge.status, 'failed');
  assert.equal(charge.paid, false);
  assert.equal(charge.captured, false);
  assert.equal(charge.failure_code, 'card_declined');
  assert.equal(charge.payment_intent, pending.id);
  assert.equal(charge.outcome.type, 'issuer_declined');
  assert.equal(charge.outcome.reason, 'generic_decline');
  const intent = await stripe.paymentIntents.retrieve(pending.id);
  assert.equal(intent.latest_charge, later.charge);
  assert.equal(intent.last_payment_error.charge, later.charge);
  ok('declined confirm made a failed charge');
}

async function setupIntents() {
  const customer = await stripe.customers.create({email: 'saver@example.com'});
  const si = await stripe.setupIntents.create({customer: customer.id});
  assert.equal(si.status, 'requires_payment_method');
  const missing = await rejects(stripe.setupIntents.confirm(si.id), 'StripeInvalidRequestError');
  assert.equal(missing.code, 'setup_intent_unexpected_state');
  const done = await stripe.setupIntents.confirm(si.id, {payment_method: 'pm_card_visa'});
  assert.equal(done.status, 'succeeded');
  assert.equal(done.payment_method, 'pm_card_visa');
  ok('setup intent confirmed only with a payment method');
}

async function testPaymentMethods() {
  const customer = await stripe.customers.create({email: 'cards@example.com'});
  const pm = await stripe.paymentMethods.attach('pm_card_mastercard', {customer: customer.id});
  assert.equal(pm.customer, customer.id);
  assert.equal(pm.card.brand, 'mastercard');
  const ids = [];
  for await (const m of stripe.customers.listPaymentMethods(customer.id)) {
    ids.push(m.id);
  }
  assert.deepEqual(ids, ['pm_card_mastercard']);
  ok('test payment method attached and listed');

  // The answer of a paid create is lost; the client's retry gets it.
  const paid = await stripe.paymentIntents.create({amount: 2200, currency: 'usd', customer: customer.id, payment_method: 'pm_card_mastercard', confirm: true}, {idempotencyKey: 'lost-node-pay-' + process.pid});
  assert.equal(paid.status, 'succeeded');
  assert.equal(paid.lastResponse.headers['idempotent-replayed'], 'true');
  ok('lost answer of a confirmed payment retried into one payment');
}

// A paid intent's charge, refunded in part, then the subscription flow
// of Stripe's guide: default_incomplete, the first invoice's
// confirmation_secret, paid, and the subscription active.
async function chargesAndSubscriptions() {
  const paid = await stripe.paymentIntents.create({amount: 3000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true, expand: ['latest_charge']});
  assert.equal(paid.latest_charge.object, 'charge');
  assert.equal(paid.latest_charge.amount, 3000);
  assert.equal(paid.latest_charge.payment_intent, paid.id);
  const refund = await stripe.refunds.create({payment_intent: paid.id, amount: 1000});
  assert.equal(refund.charge, paid.latest_charge.id);
  const charge = await stripe.charges.retrieve(paid.latest_charge.id);
  assert.equal(charge.amount_refunded, 1000);
  assert.equal(charge.refunded, false);
  ok('a paid intent has its charge, which counts its refund');

  const customer = await stripe.customers.create({email: 'subscriber@example.com'});
  const product = await stripe.products.create({name: 'Gold'});
  const price = await stripe.prices.create({product: product.id, unit_amount: 1500, currency: 'usd', recurring: {interval: 'month'}});
  const sub = await stripe.subscriptions.create({
    customer: customer.id, items: [{price: price.id, quantity: 2}],
    payment_behavior: 'default_incomplete', expand: ['latest_invoice.confirmation_secret'],
  });
  assert.equal(sub.status, 'incomplete');
  assert.equal(sub.latest_invoice.status, 'open');
  assert.equal(sub.latest_invoice.amount_due, 3000);
  assert.ok(sub.latest_invoice.confirmation_secret.client_secret);
  const invoice = await stripe.invoices.pay(sub.latest_invoice.id);
  assert.equal(invoice.status, 'paid');
  assert.equal((await stripe.subscriptions.retrieve(sub.id)).status, 'active');
  ok('a subscription made incomplete, its first invoice paid, then active');

  const updated = await stripe.events.list({type: 'customer.subscription.updated'});
  assert.equal(updated.data.length, 1);
  assert.equal(updated.data[0].data.object.id, sub.id);
  assert.equal(updated.data[0].data.object.status, 'active');
  assert.deepEqual(updated.data[0].data.previous_attributes, {status: 'incomplete'});
  ok('the activation sent customer.subscription.updated, previously incomplete');
}

(async () => {
  await customers();
  await paymentIntents();
  await idempotency();
  await declines();
  await setupIntents();
  await testPaymentMethods();
  await chargesAndSubscriptions();
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
