<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Symfony;

use LeaseGate\Client;
use LeaseGate\ResourceName;
use LeaseGate\Symfony\LeaseGateStore;
use LeaseGate\Tests\Support\CountingTransport;
use LeaseGate\Tests\Support\Frameworks;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\Helper;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\TransportException;
use LeaseGate\UnavailableException;
use Symfony\Component\Lock\BlockingStoreInterface;
use Symfony\Component\Lock\Exception\InvalidTtlException;
use Symfony\Component\Lock\Exception\LockAcquiringException;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Exception\LockStorageException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\PersistingStoreInterface;

/**
 * The Symfony Lock store against a live gateway. The first cases cover
 * what Symfony's own store suite checks (save/exists/delete, conflicts,
 * expiry with whole-second leases, putOffExpiration, blocking), written
 * for this store; the rest cover what is the gateway's own: fencing
 * tokens, resource names, outages.
 */
final class LeaseGateStoreTest extends TestCase
{
    protected function setUp(): void
    {
        Frameworks::require(BlockingStoreInterface::class, 'php-symfony-lock');
    }

    private static function store(float $initialTtl = 300.0, int $maxWaitMs = LeaseGateStore::MAX_WAIT_MS): LeaseGateStore
    {
        return new LeaseGateStore(Gateway::client(), $initialTtl, $maxWaitMs);
    }

    private static function key(string $what): Key
    {
        return new Key(Gateway::name('sf-' . $what));
    }

    public function testTheStoreIsAPersistingAndBlockingStore(): void
    {
        $store = self::store();
        self::assertInstanceOf(PersistingStoreInterface::class, $store);
        self::assertInstanceOf(BlockingStoreInterface::class, $store);
        self::throws(InvalidTtlException::class, fn () => new LeaseGateStore(Gateway::client(), 0.0), 'initial TTL 0');
    }

    public function testSaveExistsDelete(): void
    {
        $store = self::store();
        $key = self::key('save');
        self::eq($store->exists($key), false, 'exists before save');
        $store->save($key);
        self::eq($store->exists($key), true, 'exists after save');
        $store->delete($key);
        self::eq($store->exists($key), false, 'exists after delete');
        self::throws(\LeaseGate\NotFoundException::class, fn () => Gateway::client()->status(LeaseGateStore::resource($key)), 'the gateway has no lock after delete');
    }

    public function testKeysOfDifferentResourcesAreIndependent(): void
    {
        $store = self::store();
        $k1 = self::key('res-1');
        $k2 = self::key('res-2');
        $store->save($k1);
        self::eq([$store->exists($k1), $store->exists($k2)], [true, false], 'after saving k1');
        $store->save($k2);
        self::eq([$store->exists($k1), $store->exists($k2)], [true, true], 'after saving k2');
        $store->delete($k1);
        self::eq([$store->exists($k1), $store->exists($k2)], [false, true], 'after deleting k1');
        $store->delete($k2);
        self::eq([$store->exists($k1), $store->exists($k2)], [false, false], 'after deleting k2');
    }

    public function testASecondKeyOnTheSameResourceConflictsAndChangesNothing(): void
    {
        $store = self::store();
        $name = Gateway::name('sf-same');
        $k1 = new Key($name);
        $k2 = new Key($name);
        $store->save($k1);
        self::eq([$store->exists($k1), $store->exists($k2)], [true, false], 'k1 holds');
        self::throws(LockConflictedException::class, fn () => $store->save($k2), 'saving k2 while k1 holds');
        self::eq([$store->exists($k1), $store->exists($k2)], [true, false], 'the refused save changed nothing');
        $store->delete($k2); // not held by k2: must not release k1's lease
        self::eq($store->exists($k1), true, 'deleting k2 leaves k1 alone');
        $store->delete($k1);
        self::eq([$store->exists($k1), $store->exists($k2)], [false, false], 'after deleting k1');
        $store->save($k2);
        self::eq([$store->exists($k1), $store->exists($k2)], [false, true], 'k2 holds once k1 is gone');
        $store->delete($k2);
    }

    public function testSavingTwiceKeepsTheLease(): void
    {
        $store = self::store();
        $key = self::key('twice');
        $store->save($key);
        $token = LeaseGateStore::token($key);
        $store->save($key);
        self::eq(LeaseGateStore::token($key), $token, 'the second save keeps the token');
        self::eq($store->exists($key), true, 'still held');
        $store->delete($key);
    }

    public function testDeletingAKeyThatWasNeverSavedLeavesOthersAlone(): void
    {
        $store = self::store();
        $k1 = self::key('isolated-1');
        $k2 = self::key('isolated-2');
        $store->save($k1);
        $store->delete($k2);
        self::eq([$store->exists($k1), $store->exists($k2)], [true, false], 'after deleting the unsaved k2');
        $store->delete($k1);
    }

    public function testTheLeaseExpiresAfterThePutOffTtl(): void
    {
        $store = self::store();
        $key = self::key('expires');
        $store->save($key);
        $store->putOffExpiration($key, 2.0);
        self::eq($store->exists($key), true, 'held right after putOffExpiration(2 s)');
        usleep(3_000_000);
        self::eq($store->exists($key), false, 'gone 3 s later');
    }

    public function testPutOffExpirationExtendsTheLease(): void
    {
        $store = self::store(1.0); // save() takes a 1 s lease
        $key = self::key('extends');
        $store->save($key);
        $store->putOffExpiration($key, 3.0);
        usleep(1_800_000);
        self::eq($store->exists($key), true, 'held 1.8 s after a 1 s save extended to 3 s');
        $store->delete($key);
    }

    public function testPutOffExpirationBeyondTheKeysLifetimeThrowsLockExpired(): void
    {
        $store = self::store();
        $key = self::key('tiny-ttl');
        $store->save($key);
        self::throws(LockExpiredException::class, fn () => $store->putOffExpiration($key, 1 / 1_000_000), 'a TTL shorter than the round trip');
        self::eq($store->exists($key), false, 'the expired Key released its lease');
    }

    public function testPutOffExpirationSetsTheKeysLifetime(): void
    {
        $store = self::store();
        $key = self::key('lifetime');
        $store->save($key);
        self::assertLessThanOrEqual(300.0, $key->getRemainingLifetime(), 'save() bounds the lifetime by the initial TTL');
        $store->putOffExpiration($key, 1.0);
        $left = $key->getRemainingLifetime();
        self::assertTrue($left !== null && $left >= 0.0 && $left <= 1.0, 'remaining lifetime in 0..1 s: ' . self::show($left));
        self::throws(InvalidTtlException::class, fn () => $store->putOffExpiration($key, 0.0), 'TTL 0');
        $store->delete($key);
    }

    public function testAnExpiredKeyIsNotSavedAndLeavesTheResourceFree(): void
    {
        $store = self::store();
        $name = Gateway::name('sf-expired');
        $k1 = new Key($name);
        $k2 = new Key($name);
        $k1->reduceLifetime(0);
        self::throws(LockExpiredException::class, fn () => $store->save($k1), 'saving an expired Key');
        self::eq($store->exists($k1), false, 'the expired Key does not hold');
        $store->save($k2);
        self::eq($store->exists($k2), true, 'another Key takes the resource at once');
        $store->delete($k2);
    }

    public function testPutOffExpirationOfALostLeaseConflicts(): void
    {
        $store = self::store(1.0);
        $name = Gateway::name('sf-lost');
        $k1 = new Key($name);
        $store->save($k1);
        self::assertTrue(self::eventually(fn () => !$store->exists($k1), 4.0), 'the 1 s lease expires');
        $k2 = new Key($name);
        $store->save($k2);
        self::eq([$store->exists($k1), $store->exists($k2)], [false, true], 'the new Key holds, the former one does not');
        self::throws(LockConflictedException::class, fn () => $store->putOffExpiration($k1, 10.0), 'extending a lease another Key now holds');
        self::throws(LockConflictedException::class, fn () => $store->putOffExpiration(new Key($name), 10.0), 'extending a Key never saved');
        self::eq($store->exists($k2), true, 'the new holder keeps its lease');
        $store->delete($k1);
        self::eq($store->exists($k2), true, 'deleting the former holder leaves the new one');
        $store->delete($k2);
    }

    public function testWaitAndSaveIsWokenByTheReleaseOfAnotherProcess(): void
    {
        $name = Gateway::name('sf-blocking');
        $helper = new Helper('symfony_hold.php', [Gateway::url(), $name, '300']);
        $held = $helper->line();
        self::assertMatchesRegularExpression('/^held \d+$/', $held, 'the other process holds the lock: ' . $held);
        $holderToken = (int) substr($held, 5);

        $wire = new CountingTransport(Gateway::transport());
        $store = new LeaseGateStore(new Client(Gateway::url(), null, $wire));
        $key = new Key($name);
        self::throws(LockConflictedException::class, fn () => $store->save($key), 'save while the other process holds it');
        $helper->send('go');
        $wire->requests = [];
        $start = microtime(true);
        $store->waitAndSave($key);
        $elapsed = microtime(true) - $start;
        self::eq(count($wire->requests), 1, 'waitAndSave waits in one request on the gateway, never polling: ' . self::show($wire->requests));
        self::eq($helper->finish(), [0, 'released'], 'the holder released while we waited');
        self::eq($store->exists($key), true, 'waitAndSave holds the lock');
        self::assertGreaterThan($holderToken, LeaseGateStore::token($key), 'the waiter gets a higher fencing token');
        self::assertTrue($elapsed >= 0.25 && $elapsed < 1.3, sprintf('woken by the release 0.3 s in, took %.2f s', $elapsed));
        $store->delete($key);
    }

    public function testWaitAndSaveWaitsLongerThanOneRequest(): void
    {
        $store = self::store(300.0, 300); // 0.3 s per waiting request
        $name = Gateway::name('sf-long-wait');
        $holder = new Key($name);
        (self::store(1.0))->save($holder); // expires after 1 s
        $key = new Key($name);
        $start = microtime(true);
        $store->waitAndSave($key);
        $elapsed = microtime(true) - $start;
        self::eq($store->exists($key), true, 'acquired when the holder expired');
        self::assertTrue($elapsed >= 0.5 && $elapsed < 3.0, sprintf('waited out a 1 s lease over several 0.3 s requests, took %.2f s', $elapsed));
        $store->delete($key);
    }

    public function testFencingTokensIncreaseAcrossHolders(): void
    {
        $store = self::store();
        $name = Gateway::name('sf-fence');
        $k1 = new Key($name);
        self::eq(LeaseGateStore::token($k1), null, 'no token before save');
        $store->save($k1);
        $t1 = LeaseGateStore::token($k1);
        self::eq(is_int($t1) && $t1 > 0, true, 'a positive token after save: ' . self::show($t1));
        self::eq($k1->getState(LeaseGateStore::class)['token'] ?? null, $t1, 'the token is in the Key state');
        $store->putOffExpiration($k1, 30.0);
        self::eq(LeaseGateStore::token($k1), $t1, 'putOffExpiration keeps the token');
        $store->delete($k1);
        self::eq(LeaseGateStore::token($k1), null, 'no token after delete');

        $k2 = new Key($name);
        $store->save($k2);
        self::assertGreaterThan($t1, LeaseGateStore::token($k2), 'the next holder gets a higher token');
        $lease = Gateway::client()->status(LeaseGateStore::resource($k2));
        self::eq($lease->token, LeaseGateStore::token($k2), 'the Key carries the gateway\'s token');
        $store->delete($k2);
    }

    public function testAnySymfonyKeyIsItsOwnLock(): void
    {
        $store = self::store();
        $base = Gateway::name('sf-names');
        $names = [
            'plain' => $base,
            'not-utf8' => $base . "\xff\xfe",
            'control' => $base . "\n",
            'c1-control' => $base . "\u{85}",
            'long' => $base . str_repeat('x', 300),
            'long-prefix' => $base . str_repeat('x', 301),
            'looks-hashed' => ResourceName::HASHED_PREFIX . hash('sha256', $base . "\n"),
            'empty' => '',
        ];
        $keys = [];
        foreach ($names as $label => $name) {
            $keys[$label] = new Key($name);
            $store->save($keys[$label]);
        }
        foreach ($keys as $label => $key) {
            self::eq($store->exists($key), true, "$label: held");
            $resource = LeaseGateStore::resource($key);
            self::assertTrue(ResourceName::valid($resource), "$label: maps to a valid resource " . self::show($resource));
        }
        $tokens = array_map(fn (Key $k) => LeaseGateStore::token($k), $keys);
        self::eq(count(array_unique($tokens)), count($tokens), 'every name is its own lock (all held at once, distinct tokens)');
        self::eq(LeaseGateStore::resource($keys['plain']), $base, 'a valid name is the resource itself');
        self::eq(Gateway::client()->status($base)->token, $tokens['plain'], 'so the plain client sees the same lock');
        self::eq(LeaseGateStore::resource($keys['looks-hashed']) !== $names['looks-hashed'], true, 'a name starting with sha256: is hashed too');
        foreach ($keys as $key) {
            $store->delete($key);
        }
    }

    public function testASerializedKeyStillReleasesItsLock(): void
    {
        $store = self::store();
        $key = self::key('serialized');
        $store->save($key);
        $copy = unserialize(serialize($key));
        self::assertInstanceOf(Key::class, $copy);
        self::eq($store->exists($copy), true, 'the copy holds the lock');
        $store->delete($copy);
        self::eq($store->exists($key), false, 'deleting the copy released it');
    }

    public function testThroughSymfonysLockFactory(): void
    {
        $factory = new LockFactory(self::store());
        $name = Gateway::name('sf-factory');
        $key = new Key($name);
        $lock = $factory->createLockFromKey($key, 30.0);
        self::eq($lock->acquire(), true, 'acquire');
        self::eq($lock->isAcquired(), true, 'isAcquired');
        $left = $lock->getRemainingLifetime();
        self::assertTrue($left !== null && $left > 28.0 && $left <= 30.0, 'the lock TTL applies: ' . self::show($left));
        self::assertIsInt(LeaseGateStore::token($key), 'the token is readable through the Key');

        $other = $factory->createLock($name, 30.0);
        self::eq($other->acquire(), false, 'another lock on the resource is refused');
        $lock->release();
        self::eq($other->acquire(true), true, 'a blocking acquire (waitAndSave) after the release');
        self::eq($lock->isAcquired(), false, 'the first lock is released');
        $other->release();
    }

    public function testALockCycleIsTwoRequestsWhenTheLockTtlIsTheStoresInitialTtl(): void
    {
        $wire = new CountingTransport(Gateway::transport());
        // Symfony's default lock TTL and the store's default initial TTL.
        $factory = new LockFactory(new LeaseGateStore(new Client(Gateway::url(), null, $wire)));
        $key = new Key(Gateway::name('sf-two-calls'));
        $lock = $factory->createLockFromKey($key, 300.0);
        self::eq($lock->acquire(), true, 'acquire');
        $left = $lock->getRemainingLifetime();
        self::assertTrue($left !== null && $left > 298.0 && $left <= 300.0, 'the lock TTL applies: ' . self::show($left));
        $path = '/locks/' . rawurlencode(LeaseGateStore::resource($key));
        self::eq($wire->requests, ['POST ' . $path], 'acquire: save only, putOffExpiration answered from the save');
        $lease = Gateway::client()->status(LeaseGateStore::resource($key));
        $gatewayLeft = $lease->expiresAt->getTimestamp() - $lease->acquiredAt->getTimestamp();
        self::eq($gatewayLeft, 300, 'the gateway holds a 300 s lease');
        $lock->release();
        self::eq($wire->requests, ['POST ' . $path, 'DELETE ' . $path], 'release: delete only, exists() answered from it');
        self::eq($lock->isAcquired(), false, 'released');

        // Another TTL than the save's: putOffExpiration asks the gateway.
        $wire->requests = [];
        $other = $factory->createLock(Gateway::name('sf-three-calls'), 10.0);
        self::eq($other->acquire(), true, 'acquire with a 10 s TTL');
        self::eq(count($wire->requests), 2, 'save and a renew to 10 s: ' . self::show($wire->requests));
        $other->release();
    }

    public function testPutOffExpirationAsksTheGatewayUnlessItFollowsItsOwnSaveAtOnce(): void
    {
        $wire = new CountingTransport(Gateway::transport());
        $store = new LeaseGateStore(new Client(Gateway::url(), null, $wire), 1.0);

        $key = self::key('put-off-later');
        $store->save($key);
        usleep(100_000); // a tenth of the 1 s lease has passed
        $wire->requests = [];
        $store->putOffExpiration($key, 1.0);
        self::eq(count($wire->requests), 1, 'a putOffExpiration 0.1 s into a 1 s lease renews it');
        $wire->requests = [];
        $store->putOffExpiration($key, 1.0);
        self::eq(count($wire->requests), 1, 'a second putOffExpiration renews it');
        $store->delete($key);

        $key = self::key('put-off-copy');
        $store->save($key);
        $copy = unserialize(serialize($key));
        self::assertInstanceOf(Key::class, $copy);
        $wire->requests = [];
        $store->putOffExpiration($copy, 1.0);
        self::eq(count($wire->requests), 1, 'a serialized copy of the Key renews (its clock may be another host\'s)');
        $store->delete($copy);

        $key = self::key('put-off-tiny');
        $store->save($key);
        $wire->requests = [];
        self::throws(LockExpiredException::class, fn () => $store->putOffExpiration($key, 1 / 1_000_000), 'a TTL shorter than the round trip');
        self::eq(end($wire->requests), 'DELETE /locks/' . rawurlencode(LeaseGateStore::resource($key)), 'the expired Key is released');
        self::eq($store->exists($key), false, 'the expired Key released its lease');
    }

    public function testAnOutageIsAnExceptionNeverALock(): void
    {
        $dead = new LeaseGateStore(new Client(Gateway::deadUrl(), null, Gateway::transport(), 2.0));
        $key = self::key('dead');
        $e = self::throws(LockAcquiringException::class, fn () => $dead->save($key), 'save with no gateway');
        self::assertInstanceOf(TransportException::class, $e->getPrevious(), 'the transport error is the previous exception');
        self::throws(LockAcquiringException::class, fn () => $dead->waitAndSave($key), 'waitAndSave with no gateway');

        $down = new LeaseGateStore(Gateway::client(Gateway::downUrl()));
        $e = self::throws(LockAcquiringException::class, fn () => $down->save($key), 'save with Redis down');
        self::assertInstanceOf(UnavailableException::class, $e->getPrevious(), 'UnavailableException is the previous exception');

        // A Key that holds a lease on the live gateway, asked of the dead one.
        $store = self::store();
        $store->save($key);
        self::throws(LockStorageException::class, fn () => $dead->exists($key), 'exists with no gateway');
        self::throws(LockStorageException::class, fn () => $dead->putOffExpiration($key, 10.0), 'putOffExpiration with no gateway');
        self::throws(\Symfony\Component\Lock\Exception\LockReleasingException::class, fn () => $dead->delete($key), 'delete with no gateway');
        self::eq($store->exists($key), true, 'a failed delete keeps the Key\'s lease');
        $store->delete($key);
    }
}
