// kafkajs consumer for benches/compare.py's consumer rows (issue 15).
//   NODE_PATH=compat-tests/.cache/node/node_modules node benches/kafkajs_consume.js BROKER TOPIC N
// kafkajs has no public assign(): this is its ordinary consumer (consumer.run, eachBatch) in a
// fresh group with nothing committed, subscribed from the beginning; the topic has 1 partition.
// The group join is outside the timed span: records/s is counted from the first record to the
// N-th. Fetch settings as the other consumer rows: maxWaitTimeInMs 500, minBytes 1,
// maxBytes 52428800, maxBytesPerPartition 1048576. Prints {"records": n, "seconds": s}.
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

const [broker, topic, nArg] = process.argv.slice(2)
const N = Number(nArg)
const kafka = new Kafka({ clientId: 'bench-kafkajs', brokers: [broker], logLevel: logLevel.ERROR })

async function main() {
  const consumer = kafka.consumer({
    groupId: `bench-kjs-${topic}-${process.pid}-${Date.now()}`,
    maxWaitTimeInMs: 500, minBytes: 1, maxBytes: 52428800, maxBytesPerPartition: 1048576,
    allowAutoTopicCreation: false,
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let got = 0
  let first = null
  let last = null
  const done = new Promise((resolve) => {
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (got >= N) return
        const c = batch.messages.length
        if (c > 0 && first === null) first = process.hrtime.bigint()
        got += c
        if (got >= N) {
          last = process.hrtime.bigint()
          resolve()
        }
      },
    })
  })
  const timer = setTimeout(() => {
    console.error(`kafkajs_consume: consumed ${got} of ${N} before the timeout`)
    process.exit(1)
  }, 120000)
  await done
  clearTimeout(timer)
  console.log(JSON.stringify({ records: got, seconds: Number(last - first) / 1e9 }))
  await consumer.disconnect()
  process.exit(0)
}

main().catch((e) => { console.error(e); process.exit(1) })
