// Opens Strata's web console in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core) and writes what the rendered pages show, one file per view, in the same
// line formats the shell case derives from Kafka's tools, so the two can be compared as text.
// Screenshots of every view are kept in $OUT.
// env: ADMIN (host:port), TOPIC, GROUP, LIVE_GROUP, EVIL_CLIENT, OUT
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const { ADMIN, TOPIC, GROUP, LIVE_GROUP, EVIL_CLIENT, OUT } = process.env;
const base = `http://${ADMIN}/`;
const out = (name, lines) => fs.writeFileSync(path.join(OUT, name), lines.join('\n') + '\n');
const fail = msg => { console.error('ASSERTION FAILED: ' + msg); process.exitCode = 1; };

async function view(page, hash, selector) {
  await page.goto(base + hash);
  await page.waitForSelector(selector, { timeout: 15000 });
}

// Rows of a table as {field: text}, keyed by the row's data attributes.
async function rows(page, tableId) {
  return page.$$eval(`#${tableId} tbody tr`, trs => trs.map(tr => {
    const r = { ...tr.dataset };
    for (const td of tr.querySelectorAll('td[data-field]')) r[td.dataset.field] = td.textContent.trim();
    return r;
  }));
}
const plain = s => s.replace(/,/g, '');

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--headless=new'] });
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  const dialogs = [];
  page.on('dialog', d => { dialogs.push(d.message()); d.dismiss(); });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  try {
    // Overview: cluster, brokers, and the throughput plot read twice while a producer runs.
    await view(page, '#/', '#throughput-plot');
    const cluster = await rows(page, 'brokers');
    out('console-page-brokers.txt', cluster.map(b => `${b.id} ${b.state}`));
    const read = () => page.$eval('#throughput-plot', c => ({
      messages_in: Number(c.dataset.messagesIn), bytes_in: Number(c.dataset.bytesIn), pixels: c.toDataURL(),
    }));
    const first = await read();
    await page.screenshot({ path: path.join(OUT, 'console-overview-1.png'), fullPage: true });
    await page.waitForTimeout(5000);
    const second = await read();
    await page.screenshot({ path: path.join(OUT, 'console-overview-2.png'), fullPage: true });
    out('console-page-throughput.txt', [
      `first messages_in=${first.messages_in} bytes_in=${first.bytes_in}`,
      `second messages_in=${second.messages_in} bytes_in=${second.bytes_in}`,
      `plot_changed=${first.pixels !== second.pixels}`,
    ]);

    await view(page, '#/topics', '#topics');
    await page.screenshot({ path: path.join(OUT, 'console-topics.png'), fullPage: true });

    // The topic: partition, leader, ISR and offsets.
    await view(page, '#/topics/' + encodeURIComponent(TOPIC), '#partitions');
    await page.screenshot({ path: path.join(OUT, 'console-topic.png'), fullPage: true });
    const parts = await rows(page, 'partitions');
    out('console-page-partitions.txt', parts.map(p => `${p.partition} ${p.leader} ${p.isr}`));
    out('console-page-ends.txt', parts.map(p => `${TOPIC}:${p.partition}:${plain(p.high_watermark)}`));

    // Groups list, the finished group's lag, the live group's members.
    await view(page, '#/groups', '#groups');
    await page.screenshot({ path: path.join(OUT, 'console-groups.png'), fullPage: true });
    await view(page, '#/groups/' + encodeURIComponent(GROUP), '#offsets');
    await page.screenshot({ path: path.join(OUT, 'console-group.png'), fullPage: true });
    const offsets = await rows(page, 'offsets');
    out('console-page-lag.txt', offsets.filter(o => o.topic === TOPIC).map(o => `${o.topic} ${o.partition} ${plain(o.lag)}`));

    await view(page, '#/groups/' + encodeURIComponent(LIVE_GROUP), '#members tbody tr');
    await page.screenshot({ path: path.join(OUT, 'console-live-group.png'), fullPage: true });
    const members = await rows(page, 'members');
    out('console-page-members.txt', members.map(m => `${m.client_id}\t${m.host}\t${m.assignment}`));
    // The client id is markup: it must show as text, and no element of it may exist.
    if (!members.some(m => m.client_id === EVIL_CLIENT)) fail(`client id ${EVIL_CLIENT} not shown as text: ${JSON.stringify(members)}`);
    const injected = await page.$$eval('main img, main script, main iframe', e => e.length);
    if (injected) fail(`${injected} elements injected from names`);
    await page.waitForTimeout(500);
    if (dialogs.length) fail('a dialog opened: ' + dialogs.join('; '));
    if (errors.length) fail('page errors: ' + errors.join('; '));
  } catch (e) {
    fail(e.stack || String(e));
    await page.screenshot({ path: path.join(OUT, 'console-error.png'), fullPage: true }).catch(() => {});
  } finally {
    await browser.close();
  }
})();
