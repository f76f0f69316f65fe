<?php

// Run before each PHP example of the docs (docs_php_test.go): the
// package, the frameworks where Debian installs them, and what the
// examples take from the app around them (functions and variables with
// made-up bodies). Every notice or warning is an error, and PHP runs
// with Debian's CLI variables_order (GPCS: no $_ENV).

set_error_handler(static function (int $no, string $msg, string $file, int $line): never {
    throw new ErrorException($msg, 0, $no, $file, $line);
});

require __DIR__ . '/../../../php/autoload.php';
foreach ([
    'Symfony/Component/Lock/autoload.php',
    'Symfony/Component/HttpKernel/autoload.php',
    'Illuminate/Cache/autoload.php',
    'Illuminate/Http/autoload.php',
    'PHPUnit/Autoload.php',
] as $file) {
    if (is_file('/usr/share/php/' . $file)) {
        require_once '/usr/share/php/' . $file;
    }
}

function publish(mixed ...$args): void {}
function runReport(mixed ...$args): void {}
function saveInvoice(mixed ...$args): void {}
function build_report(mixed ...$args): mixed { return null; }

$db = new class {
    public function __call(string $name, array $args): mixed { return null; }
};
$invoice = ['id' => 42];
$mid = 'user-42';
$secret = 'docs-check-webhook-secret';
$body = '{}';
$header = 't=1,v1=00';
