<?php
// Symfony Messenger's Doctrine transport on SQLite (Debian 12's
// php-symfony-messenger and php-symfony-doctrine-messenger 5.4, DBAL 3)
// doing oncebox's payout work, for tests/bench/bench_peers.c
// (docs/performance.md, "Peers").
//
//   php symfony_bench.php DB NDJSON N
//
// The transport: Doctrine's Connection + DoctrineTransport with the
// PhpSerializer (Messenger's default), table messenger_messages, on one
// DBAL connection (pdo_sqlite) in WAL with synchronous=FULL. The first N
// lines of NDJSON are sent through the transport (one enclosing
// transaction, not timed). Then Messenger's Worker consumes them with a
// bus of HandleMessageMiddleware only (the framework adds more
// middleware; this is the least it runs). The handler does in ONE DBAL
// transaction what oncebox's payout module does: the dedup claim INSERT ..
// ON CONFLICT DO NOTHING RETURNING (skip if already claimed), parse and
// check the body, the payout row, the outbox row with its JSON payload,
// UUIDv7 ids, on the transport's own connection. Messenger then acks (a
// DELETE) in its own statement, after the handler's commit, as it always
// does; the fetch marks the row delivered in a transaction of its own.
//
// Prints one JSON line: {"impl","n","seconds","sqlite","synchronous",
// "maxRssKiB"}. Timed: Worker::run() from its start until it stops after
// the N-th message was handled and acked. Exit 1 if any count is off.

require_once '/usr/share/php/Doctrine/DBAL/autoload.php';
require_once '/usr/share/php/Symfony/Component/Messenger/autoload.php';
require_once '/usr/share/php/Symfony/Component/Messenger/Bridge/Doctrine/autoload.php';

use Doctrine\DBAL\Connection as DBALConnection;
use Doctrine\DBAL\DriverManager;
use Symfony\Component\Messenger\Bridge\Doctrine\Transport\Connection;
use Symfony\Component\Messenger\Bridge\Doctrine\Transport\DoctrineTransport;
use Symfony\Component\Messenger\Envelope;
use Symfony\Component\Messenger\Handler\HandlersLocator;
use Symfony\Component\Messenger\MessageBus;
use Symfony\Component\Messenger\Middleware\HandleMessageMiddleware;
use Symfony\Component\Messenger\Transport\Serialization\PhpSerializer;
use Symfony\Component\Messenger\Worker;

final class PaymentCaptured
{
    public $id;
    public $body;

    public function __construct(string $id, string $body)
    {
        $this->id = $id;
        $this->body = $body;
    }
}

function uuid7(): string
{
    $b = random_bytes(16);
    $ms = (int) floor(microtime(true) * 1000);
    $ts = pack('J', $ms);  // 8 bytes big-endian; keep the low 6
    $b = substr($ts, 2, 6) . substr($b, 6);
    $b[6] = chr(0x70 | (ord($b[6]) & 0x0f));
    $b[8] = chr(0x80 | (ord($b[8]) & 0x3f));
    $h = bin2hex($b);
    return substr($h, 0, 8) . '-' . substr($h, 8, 4) . '-' . substr($h, 12, 4)
        . '-' . substr($h, 16, 4) . '-' . substr($h, 20);
}

final class PayoutHandler
{
    private const CONSUMER = 'create-merchant-payout-v1';
    private const UUID = '/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/';
    private $db;
    private $n;
    public $handled = 0;
    public $worker;

    public function __construct(DBALConnection $db, int $n)
    {
        $this->db = $db;
        $this->n = $n;
    }

    public function __invoke(PaymentCaptured $m): void
    {
        $db = $this->db;
        $db->transactional(function () use ($db, $m) {
            $now = (int) floor(microtime(true) * 1000);
            $claimed = $db->fetchOne(
                'INSERT INTO processed_message(consumer_name, message_id,'
                . ' processed_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'
                . ' RETURNING 1', [self::CONSUMER, $m->id, $now]);
            if ($claimed === false) {
                return;  // duplicate
            }
            $p = json_decode($m->body, true, 8, JSON_THROW_ON_ERROR);
            if (!is_array($p) || !is_string($p['paymentId'] ?? null)
                || !preg_match(self::UUID, $p['paymentId'])
                || !is_string($p['merchantId'] ?? null)
                || !preg_match(self::UUID, $p['merchantId'])
                || !is_int($p['amountInMinorUnits'] ?? null)
                || $p['amountInMinorUnits'] <= 0
                || !is_string($p['currency'] ?? null)
                || !preg_match('/^[A-Z]{3}$/', $p['currency'])) {
                throw new \UnexpectedValueException("bad PaymentCaptured {$m->id}");
            }
            $payoutId = uuid7();
            $paid = $db->fetchOne(
                'INSERT INTO merchant_payout(id, source_payment_id, merchant_id,'
                . ' amount_minor, currency, source_event_id, created_at)'
                . ' VALUES (?, ?, ?, ?, ?, ?, ?)'
                . ' ON CONFLICT(source_payment_id) DO NOTHING RETURNING 1',
                [$payoutId, $p['paymentId'], $p['merchantId'],
                 $p['amountInMinorUnits'], $p['currency'], $m->id, $now]);
            if ($paid === false) {
                throw new \UnexpectedValueException("payment {$p['paymentId']} already paid");
            }
            $payload = json_encode([
                'payoutId' => $payoutId, 'paymentId' => $p['paymentId'],
                'merchantId' => $p['merchantId'],
                'amountInMinorUnits' => $p['amountInMinorUnits'],
                'currency' => $p['currency'],
            ], JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES);
            $db->executeStatement(
                'INSERT INTO outbox_event(id, causation_id, event_type,'
                . ' aggregate_id, payload, created_at, next_attempt_at)'
                . ' VALUES (?, ?, ?, ?, ?, ?, ?)',
                [uuid7(), $m->id, 'MerchantPayoutCreated', $p['paymentId'],
                 $payload, $now, $now]);
        });
        if (++$this->handled === $this->n && $this->worker !== null) {
            $this->worker->stop();  // after this message's ack
        }
    }
}

[$dbPath, $ndjson, $nArg] = array_slice($argv, 1) + [null, null, null];
$n = (int) $nArg;
if ($dbPath === null || $ndjson === null || $n < 1) {
    fwrite(STDERR, "usage: symfony_bench.php DB NDJSON N\n");
    exit(2);
}

$db = DriverManager::getConnection(['driver' => 'pdo_sqlite', 'path' => $dbPath]);
$db->executeStatement('PRAGMA journal_mode=WAL');
$db->executeStatement('PRAGMA synchronous=FULL');
$db->executeStatement('PRAGMA busy_timeout=5000');
$sync = (int) $db->fetchOne('PRAGMA synchronous');
$mode = $db->fetchOne('PRAGMA journal_mode');
if ($sync !== 2 || $mode !== 'wal') {
    fwrite(STDERR, "symfony: synchronous=$sync journal_mode=$mode\n");
    exit(1);
}
foreach (array_filter(array_map('trim', explode(';',
        preg_replace('/^--.*$/m', '', file_get_contents(__DIR__ . '/schema.sql'))))) as $ddl) {
    $db->executeStatement($ddl);
}

$connection = new Connection(['table_name' => 'messenger_messages',
    'queue_name' => 'default', 'redeliver_timeout' => 3600,
    'auto_setup' => false], $db);
$connection->setup();
$transport = new DoctrineTransport($connection, new PhpSerializer());

// Enqueue (not timed).
$f = fopen($ndjson, 'r');
$db->beginTransaction();
for ($i = 0; $i < $n && ($line = fgets($f)) !== false; $i++) {
    $m = json_decode($line, true, 8, JSON_THROW_ON_ERROR);
    $transport->send(new Envelope(new PaymentCaptured($m['id'], $m['body'])));
}
$db->commit();
fclose($f);
if ($i !== $n) {
    fwrite(STDERR, "symfony: $ndjson has $i lines, want $n\n");
    exit(1);
}

$handler = new PayoutHandler($db, $n);
$bus = new MessageBus([new HandleMessageMiddleware(new HandlersLocator([
    PaymentCaptured::class => [$handler],
]))]);
$worker = new Worker(['doctrine' => $transport], $bus);
$handler->worker = $worker;

$t0 = hrtime(true);
$worker->run(['sleep' => 100000]);
$seconds = (hrtime(true) - $t0) / 1e9;

$payouts = (int) $db->fetchOne('SELECT count(*) FROM merchant_payout');
$events = (int) $db->fetchOne('SELECT count(*) FROM outbox_event');
$claims = (int) $db->fetchOne('SELECT count(*) FROM processed_message');
$left = (int) $db->fetchOne('SELECT count(*) FROM messenger_messages');
$ok = $payouts === $n && $events === $n && $claims === $n && $left === 0;
if (!$ok) {
    fwrite(STDERR, "symfony: payouts $payouts events $events claims $claims"
        . " left in the queue $left, want $n\n");
}
echo json_encode([
    'impl' => 'symfony-messenger', 'n' => $n, 'seconds' => $seconds,
    'sqlite' => $db->fetchOne('SELECT sqlite_version()'),
    'synchronous' => $sync,
    'maxRssKiB' => getrusage()['ru_maxrss'],
]), "\n";
exit($ok ? 0 : 1);
