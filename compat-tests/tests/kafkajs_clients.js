// kafkajs cases. Usage: node kafkajs_clients.js roundtrip|group   (exit 0 = pass)
// kafkajs has no public "assign" consumer, so the core round trip reads with the
// client's own Cluster/Broker objects (Metadata + ListOffsets + Fetch requests as
// kafkajs encodes them) instead of consumer groups; the group case uses consumer.run.
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

const BOOTSTRAP = process.env.BOOTSTRAP || '127.0.0.1:9092'
const RUN_ID = process.env.RUN_ID || String(Date.now())
const topic = n => `compat-${RUN_ID}-${n}`
const N = 500
const kafka = new Kafka({ clientId: 'compat-kafkajs', brokers: [BOOTSTRAP], logLevel: logLevel.WARN })

function fail(msg) { console.error('ASSERTION FAILED: ' + msg); process.exit(1) }

function records(tag) {
  const out = []
  for (let i = 0; i < N; i++) {
    out.push({
      key: `key-${i}`,
      value: i % 50 === 7 ? null : `value-${i}-${tag}-` + 'y'.repeat(i % 61),
      headers: { h: [String(i), 'dup'], other: 'x' },
      partition: 0,
    })
  }
  return out
}

async function createTopic(name, parts) {
  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({ topics: [{ topic: name, numPartitions: parts, replicationFactor: 1 }], waitForLeaders: true })
  if (!created) fail('createTopics returned false')
  const md = await admin.fetchTopicMetadata({ topics: [name] })
  if (md.topics[0].partitions.length !== parts) fail('metadata partition count')
  await admin.disconnect()
}

function newCluster() {
  // Kafka#createCluster is behind a private Symbol; find it without patching the library.
  const sym = Object.getOwnPropertySymbols(Object.getPrototypeOf(kafka)).concat(Object.getOwnPropertySymbols(kafka))
    .find(s => String(s).includes('createCluster'))
  return kafka[sym]({ metadataMaxAge: 300000, allowAutoTopicCreation: false, isolationLevel: 0 })
}

async function fetchAll(name, want) {
  const cluster = newCluster()
  await cluster.connect()
  await cluster.addTargetTopic(name)
  const leaders = cluster.findLeaderForPartitions(name, [0])
  const broker = await cluster.findBroker({ nodeId: Object.keys(leaders)[0] })
  const got = []
  let offset = '0'
  const deadline = Date.now() + 30000
  while (got.length < want && Date.now() < deadline) {
    const resp = await broker.fetch({
      isolationLevel: 0, maxWaitTime: 500,
      topics: [{ topic: name, partitions: [{ partition: 0, fetchOffset: offset, maxBytes: 1 << 20 }] }],
    })
    const p = resp.responses[0].partitions[0]
    if (p.errorCode !== 0) fail(`fetch error code ${p.errorCode}`)
    for (const m of p.messages) {
      if (BigInt(m.offset) < BigInt(offset)) continue // batch may start before fetchOffset
      got.push(m)
      offset = String(BigInt(m.offset) + 1n)
    }
  }
  await cluster.disconnect()
  return got
}

function hdr(v) { return Array.isArray(v) ? v.map(String) : String(v) }

async function roundtrip(codecName) {
  const codec = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }[codecName]
  const name = topic(`kjs-${codecName}`)
  await createTopic(name, 1)
  const want = records(codecName)
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  // several batches of 100 records
  for (let i = 0; i < N; i += 100) {
    const res = await producer.send({ topic: name, acks: -1, compression: codec, messages: want.slice(i, i + 100) })
    if (res[0].errorCode !== 0) fail('produce error ' + JSON.stringify(res))
  }
  await producer.disconnect()
  const got = await fetchAll(name, N)
  if (got.length !== N) fail(`got ${got.length} of ${N}`)
  got.forEach((m, i) => {
    const w = want[i]
    if (String(m.offset) !== String(i)) fail(`record ${i}: offset ${m.offset}`)
    if (String(m.key) !== w.key) fail(`record ${i}: key ${m.key}`)
    if ((m.value === null) !== (w.value === null) || (m.value !== null && String(m.value) !== w.value)) fail(`record ${i}: value ${m.value}`)
    const h = m.headers
    if (JSON.stringify(hdr(h.h)) !== JSON.stringify(w.headers.h) || String(h.other) !== 'x') fail(`record ${i}: headers ${JSON.stringify(h)}`)
  })
  // ListOffsets through the admin API
  const admin = kafka.admin(); await admin.connect()
  const offs = await admin.fetchTopicOffsets(name)
  await admin.disconnect()
  if (offs[0].high !== String(N) || offs[0].low !== '0') fail('fetchTopicOffsets ' + JSON.stringify(offs))
  console.log(`kafkajs ${codecName}: ${N} records ok`)
}

async function group() {
  const name = topic('kjs-group')
  const groupId = `compat-${RUN_ID}-kjs`
  await createTopic(name, 3)
  const producer = kafka.producer()
  await producer.connect()
  const total = 300
  const msgs = []
  for (let i = 0; i < total; i++) msgs.push({ key: `k${i}`, value: `v${i}` })
  await producer.send({ topic: name, messages: msgs })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [name], fromBeginning: true })
  const seen = new Set()
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout: saw ${seen.size} of ${total}`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(String(message.value))
        if (seen.size === total) { clearTimeout(timer); resolve() }
      },
    }).catch(reject)
  })
  await consumer.commitOffsets([]) // auto-commit flushes on stop
  await consumer.disconnect()
  const admin = kafka.admin(); await admin.connect()
  const offs = await admin.fetchOffsets({ groupId, topics: [name] })
  await admin.disconnect()
  const committed = offs[0].partitions.reduce((a, p) => a + Number(p.offset), 0)
  if (committed !== total) fail(`committed offsets sum ${committed}, want ${total}`)
  console.log(`kafkajs group: consumed ${total}, committed`)
}

// Transactions: a committed and an aborted transaction, read back by a read_committed group
// consumer (kafkajs' default isolation), which must see only the committed records.
async function txn() {
  const name = topic('kjs-txn')
  await createTopic(name, 1)
  const producer = kafka.producer({ transactionalId: `compat-${RUN_ID}-kjs-tx`, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (const [label, commit] of [['a', true], ['b', false], ['c', true]]) {
    const t = await producer.transaction()
    const msgs = []
    for (let i = 0; i < 4; i++) msgs.push({ value: `${label}${i}`, partition: 0 })
    await t.send({ topic: name, messages: msgs })
    if (commit) await t.commit(); else await t.abort()
  }
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `compat-${RUN_ID}-kjs-txn`, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [name], fromBeginning: true })
  const seen = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout: saw ${seen}`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(String(message.value))
        if (seen.length >= 8) { clearTimeout(timer); setTimeout(resolve, 1500) }
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  const want = ['a0', 'a1', 'a2', 'a3', 'c0', 'c1', 'c2', 'c3']
  if (JSON.stringify(seen) !== JSON.stringify(want)) fail(`read_committed saw ${seen}`)
  console.log('kafkajs transactions: committed visible, aborted hidden')
}

const [cas, arg] = process.argv.slice(2)
const run = cas === 'roundtrip' ? roundtrip(arg || 'none') : cas === 'group' ? group() : cas === 'txn' ? txn() : Promise.reject(new Error('unknown case'))
run.then(() => process.exit(0), e => { console.error(e); process.exit(1) })
