<?php

declare(strict_types=1);

// Autoloader for projects without Composer: require this file once.
// (With Composer, composer.json maps the same LeaseGate\ namespace to src/.)
spl_autoload_register(static function (string $class): void {
    $prefix = 'LeaseGate\\';
    if (strncmp($class, $prefix, strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
