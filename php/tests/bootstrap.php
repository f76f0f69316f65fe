<?php

declare(strict_types=1);

// PHPUnit bootstrap (phpunit.xml.dist). The package itself loads through
// its bundled autoloader; the frameworks come from Composer's vendor/
// when there is one, else from Debian's packages (php-symfony-lock,
// php-laravel-framework), whose autoloaders live under /usr/share/php.

require __DIR__ . '/../autoload.php';

if (is_file(__DIR__ . '/../vendor/autoload.php')) {
    require __DIR__ . '/../vendor/autoload.php';
} else {
    foreach ([
        'Symfony/Component/Lock/autoload.php',
        'Symfony/Component/HttpKernel/autoload.php',
        'Illuminate/autoload.php',
    ] as $file) {
        if (is_file('/usr/share/php/' . $file)) {
            require_once '/usr/share/php/' . $file;
        }
    }
}

spl_autoload_register(static function (string $class): void {
    $prefix = 'LeaseGate\\Tests\\';
    if (strncmp($class, $prefix, strlen($prefix)) === 0) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
