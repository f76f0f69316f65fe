<?php

declare(strict_types=1);

namespace LeaseGate\Tests\Laravel;

use Illuminate\Cache\CacheServiceProvider;
use Illuminate\Cache\Lock;
use Illuminate\Config\Repository as Config;
use Illuminate\Container\Container;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Support\Facades\Cache;
use Illuminate\Support\Facades\Facade;
use LeaseGate\Client;
use LeaseGate\Laravel\LeaseGateLock;
use LeaseGate\Laravel\LeaseGateLockProvider;
use LeaseGate\Laravel\LeaseGateServiceProvider;
use LeaseGate\Tests\Support\CountingTransport;
use LeaseGate\Tests\Support\Frameworks;
use LeaseGate\Tests\Support\Gateway;
use LeaseGate\Tests\Support\Helper;
use LeaseGate\Tests\Support\TestCase;
use LeaseGate\TransportException;
use LeaseGate\UnavailableException;

/** Laravel's lock contract on a live gateway, and the leasegate cache store. */
final class LeaseGateLockTest extends TestCase
{
    protected function setUp(): void
    {
        Frameworks::require(Lock::class, 'php-laravel-framework');
    }

    protected function tearDown(): void
    {
        Facade::clearResolvedInstances();
        Facade::setFacadeApplication(null);
        Container::setInstance(null);
        parent::tearDown();
    }

    private static function locks(?Client $client = null): LeaseGateLockProvider
    {
        return new LeaseGateLockProvider($client ?? Gateway::client());
    }

    private static function lockName(string $what): string
    {
        return Gateway::name('lv-' . $what);
    }

    public function testAcquireRefuseAndReleaseByOwner(): void
    {
        $locks = self::locks();
        self::assertInstanceOf(LockProvider::class, $locks);
        $name = self::lockName('owner');
        $a = $locks->lock($name, 30);
        $b = $locks->lock($name, 30);
        self::assertInstanceOf(Lock::class, $a);
        self::eq($a->owner() !== $b->owner(), true, 'two locks get two owners');
        self::eq($a->get(), true, 'a free lock is acquired');
        self::eq($a->get(), true, 'its owner acquires it again');
        self::eq($b->get(), false, 'another owner is refused');
        self::eq($b->release(), false, 'another owner cannot release it');
        self::eq($a->release(), true, 'the owner releases it');
        self::eq($a->release(), false, 'releasing twice is false');
        self::eq($b->get(), true, 'free again after the release');
        $b->release();
    }

    public function testGetWithACallbackRunsItAndReleases(): void
    {
        $locks = self::locks();
        $name = self::lockName('callback');
        $ran = 0;
        $result = $locks->lock($name, 30)->get(function () use (&$ran, $locks, $name) {
            $ran++;
            self::eq($locks->lock($name, 30)->get(), false, 'held while the callback runs');
            return 'done';
        });
        self::eq([$result, $ran], ['done', 1], 'get() returns the callback\'s result');
        self::eq($locks->lock($name, 30)->get(fn () => 'again'), 'again', 'released after the callback');

        $holder = $locks->lock($name, 30);
        $holder->get();
        $ran = 0;
        self::eq($locks->lock($name, 30)->get(function () use (&$ran) {
            $ran++;
        }), false, 'get() on a held lock is false');
        self::eq($ran, 0, 'and the callback does not run');
        $holder->release();

        $e = self::thrown(fn () => $locks->lock($name, 30)->get(function (): never {
            throw new \RuntimeException('work failed');
        }));
        self::eq($e?->getMessage(), 'work failed', 'the callback\'s exception comes through');
        self::eq($locks->lock($name, 30)->get(), true, 'and the lock was released anyway');
    }

    public function testForceReleaseReleasesWhoeverHoldsIt(): void
    {
        $locks = self::locks();
        $name = self::lockName('force');
        $a = $locks->lock($name, 30);
        $a->get();
        $locks->lock($name, 30)->forceRelease();
        self::eq($locks->lock($name, 30)->get(), true, 'another owner acquires after forceRelease');
        self::eq($a->release(), false, 'the former holder\'s release is refused');
        $locks->lock($name)->forceRelease();
        $locks->lock($name)->forceRelease(); // nothing held: no error
        self::throws(\LeaseGate\NotFoundException::class, fn () => Gateway::client()->status($a->resource()), 'nothing held');
    }

    public function testRestoreLockReleasesAsTheOwner(): void
    {
        $locks = self::locks();
        $name = self::lockName('restore');
        $a = $locks->lock($name, 30);
        $a->get();
        $restored = $locks->restoreLock($name, $a->owner());
        self::eq($restored->owner(), $a->owner(), 'the restored lock has the owner');
        self::eq($locks->restoreLock($name, 'someone-else')->release(), false, 'a lock restored with another owner cannot release');
        self::eq($restored->release(), true, 'the restored lock releases');
        self::eq($locks->lock($name, 30)->get(), true, 'free afterwards');
    }

    public function testBlockTimesOutAfterItsSeconds(): void
    {
        $locks = self::locks();
        $name = self::lockName('block-timeout');
        $holder = $locks->lock($name, 30);
        $holder->get();
        $start = microtime(true);
        $ran = false;
        self::throws(LockTimeoutException::class, fn () => $locks->lock($name, 30)->block(2, function () use (&$ran) {
            $ran = true;
        }), 'block(2) on a held lock');
        $elapsed = microtime(true) - $start;
        self::eq($ran, false, 'the callback did not run');
        self::assertTrue($elapsed >= 1.9 && $elapsed < 3.0, sprintf('timed out after about 2 s, took %.2f s', $elapsed));
        self::eq($holder->release(), true, 'the holder still held it');
    }

    public function testBlockIsWokenByTheRelease(): void
    {
        $wire = new CountingTransport(Gateway::transport());
        $locks = self::locks(new Client(Gateway::url(), null, $wire));
        $name = self::lockName('block-wake');
        $holder = $locks->lock($name, 30);
        $holder->get();
        $helper = new Helper('release_after.php', [Gateway::url(), Gateway::transportName(), $holder->resource(), $holder->owner(), '500']);
        self::eq($helper->line(), 'ready', 'the releasing process is ready');
        $waiter = $locks->lock($name, 30);
        $wire->requests = [];
        $start = microtime(true);
        $result = $waiter->block(10, fn () => 'ran');
        $elapsed = microtime(true) - $start;
        self::eq($helper->finish(), [0, 'released'], 'the holder released while block() waited');
        self::eq($result, 'ran', 'block() ran the callback');
        // Woken by the release (or the gateway's poll, the wake-up's
        // fallback), well before block(10) would give up: the bound is
        // generous, as a loaded machine took 0.92 s. That the wait is
        // one request on the gateway, not polling, is the count below.
        self::assertTrue($elapsed >= 0.45 && $elapsed < 3.0, sprintf('woken after the release 0.5 s in, long before the 10 s block ends, took %.2f s', $elapsed));
        self::eq($wire->requests[0] ?? null, 'POST /locks/' . rawurlencode($holder->resource()), 'the first request is the waiting acquire');
        self::eq(count($wire->requests), 2, 'one waiting acquire and the release, no polling: ' . self::show($wire->requests));
    }

    public function testTheLockExpiresAfterItsSeconds(): void
    {
        $locks = self::locks();
        $name = self::lockName('expiry');
        $a = $locks->lock($name, 1);
        self::eq($a->get(), true, 'a 1 s lock');
        self::eq($locks->lock($name, 30)->get(), false, 'held at first');
        usleep(1_200_000);
        $b = $locks->lock($name, 30);
        self::eq($b->get(), true, 'another owner acquires 1.2 s later');
        self::assertGreaterThan($a->token(), $b->token(), 'with a higher fencing token');
        $b->release();
    }

    public function testZeroSecondsIsALongLease(): void
    {
        $locks = new LeaseGateLockProvider(Gateway::client(), '', 3600);
        $lock = $locks->lock(self::lockName('forever'));
        self::eq($lock->get(), true, 'acquired');
        $left = $lock->lease()?->remainingMs() ?? 0;
        self::assertTrue($left > 3_590_000 && $left <= 3_600_000, 'seconds 0 takes the forever lease (3600 s here): ' . $left);
        self::eq((new LeaseGateLockProvider(Gateway::client()))->lock('x')->resource(), 'x', 'names pass through');
        $lock->release();
    }

    public function testFencingTokens(): void
    {
        $locks = self::locks();
        $name = self::lockName('fence');
        $a = $locks->lock($name, 30);
        self::eq($a->token(), null, 'no token before acquiring');
        $a->get();
        $t = $a->token();
        self::eq($t, Gateway::client()->status($a->resource())->token, 'the lock carries the gateway\'s token');
        $a->release();
        $b = $locks->lock($name, 30);
        $b->get();
        self::assertGreaterThan($t, $b->token(), 'the next holder gets a higher token');
        $b->release();
    }

    public function testAnOutageIsAnExceptionAndNothingRuns(): void
    {
        $ran = false;
        $down = self::locks(Gateway::client(Gateway::downUrl()));
        self::throws(UnavailableException::class, fn () => $down->lock(self::lockName('down'), 30)->get(function () use (&$ran) {
            $ran = true;
        }), 'get() with Redis down');
        $dead = self::locks(new Client(Gateway::deadUrl(), null, Gateway::transport(), 2.0));
        self::throws(TransportException::class, fn () => $dead->lock(self::lockName('dead'), 30)->block(5, function () use (&$ran) {
            $ran = true;
        }), 'block() with no gateway');
        self::eq($ran, false, 'no callback ran');
    }

    public function testTheClientsBoundsComeFromTheConfig(): void
    {
        // Listening, never accepting: only the request bound ends a call.
        $silent = stream_socket_server('tcp://127.0.0.1:0');
        self::assertNotFalse($silent, 'listen on a free port');
        try {
            $app = new Container();
            $app->instance('config', new Config(['leasegate' => [
                'url' => 'http://' . stream_socket_get_name($silent, false),
                'timeout' => 0.3,
                'connect_timeout' => 0.2,
            ]]));
            (new LeaseGateServiceProvider($app))->register();
            $client = $app->make(Client::class);
            $start = microtime(true);
            self::throws(TransportException::class, fn () => $client->acquire('r', 'o', 5), 'a silent gateway');
            $took = microtime(true) - $start;
            // The default bound (3 s) would take ten times as long.
            self::assertTrue($took >= 0.25 && $took < 2.0, sprintf('ended by the configured 0.3 s, took %.3f s', $took));
        } finally {
            fclose($silent);
        }
    }

    public function testCacheLockOnTheLeasegateStore(): void
    {
        $app = new Container();
        Container::setInstance($app);
        $app->instance('config', new Config([
            'cache' => [
                'default' => 'array',
                'stores' => [
                    'array' => ['driver' => 'array'],
                    'leasegate' => ['driver' => 'leasegate', 'prefix' => 'app1:'],
                ],
            ],
            'leasegate' => ['url' => Gateway::url()],
        ]));
        (new CacheServiceProvider($app))->register();
        $provider = new LeaseGateServiceProvider($app);
        $provider->register();
        $provider->boot();
        Facade::setFacadeApplication($app);

        self::eq($app->make(Client::class)->baseUrl(), Gateway::url(), 'the client comes from config/leasegate.php');
        $name = self::lockName('facade');
        $lock = Cache::store('leasegate')->lock($name, 30);
        self::assertInstanceOf(LeaseGateLock::class, $lock);
        self::eq($lock->resource(), 'app1:' . $name, 'the store\'s prefix applies');
        self::eq($lock->get(), true, 'Cache::store(leasegate)->lock() acquires on the gateway');
        self::eq(Gateway::client()->status('app1:' . $name)->owner, $lock->owner(), 'the gateway shows the lock');
        self::eq(Cache::store('leasegate')->lock($name, 30)->get(), false, 'another lock is refused');
        self::eq(Cache::store('leasegate')->restoreLock($name, $lock->owner())->release(), true, 'restoreLock through the store');
        Cache::store('leasegate')->put('k', 'v', 60);
        self::eq(Cache::store('leasegate')->get('k'), null, 'the store caches nothing');
        self::eq(Cache::store('array')->lock($name, 1) instanceof LeaseGateLock, false, 'other stores keep their locks');
        self::eq($app['config']['leasegate.locks.forever_seconds'], 86400, 'config/leasegate.php is merged');
    }
}
