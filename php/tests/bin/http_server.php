<?php

declare(strict_types=1);

// Helper process for the transport tests: a small HTTP/1.1 server that
// says which connection carried each request. Prints its address (host:port,
// or unix:PATH), then serves until its stdin closes. Every answer is JSON
// {"conn": N, "method": M, "target": T, "body": B}, N counting connections from 1:
//   /chunked  the answer in chunks (Transfer-Encoding: chunked)
//   /close    the answer, then the connection closes (Connection: close)
//   /drop     the connection closes without an answer
//   /idle-close  the answer; the connection closes as soon as it is idle
//   other     the answer with Content-Length, the connection stays open
// Usage: php http_server.php [UNIX_SOCKET_PATH]

$unix = $argv[1] ?? null;
$server = stream_socket_server($unix !== null ? 'unix://' . $unix : 'tcp://127.0.0.1:0', $errno, $error);
if ($server === false) {
    fwrite(STDERR, "listen: $error\n");
    exit(1);
}
echo $unix !== null ? 'unix:' . $unix : stream_socket_get_name($server, false), "\n";
fflush(STDOUT);

$clients = [];
$buffers = [];
$ids = [];
$conns = 0;
while (true) {
    $read = array_merge([$server, STDIN], array_values($clients));
    $none = null;
    if (stream_select($read, $none, $none, null) === false) {
        exit(1);
    }
    foreach ($read as $s) {
        if ($s === STDIN) {
            if (fgets(STDIN) === false) {
                exit(0);
            }
            continue;
        }
        if ($s === $server) {
            $c = stream_socket_accept($server);
            $k = (int) $c;
            $clients[$k] = $c;
            $buffers[$k] = '';
            $ids[$k] = ++$conns;
            continue;
        }
        $k = (int) $s;
        $data = fread($s, 65536);
        if ($data === '' || $data === false) {
            fclose($s);
            unset($clients[$k], $buffers[$k], $ids[$k]);
            continue;
        }
        $buffers[$k] .= $data;
        while (($end = strpos($buffers[$k], "\r\n\r\n")) !== false) {
            $head = substr($buffers[$k], 0, $end);
            $length = preg_match('/^Content-Length:\s*(\d+)/mi', $head, $m) === 1 ? (int) $m[1] : 0;
            if (strlen($buffers[$k]) < $end + 4 + $length) {
                break;
            }
            $body = substr($buffers[$k], $end + 4, $length);
            $buffers[$k] = substr($buffers[$k], $end + 4 + $length);
            [$method, $path] = explode(' ', $head) + [1 => '/'];
            $json = (string) json_encode(['conn' => $ids[$k], 'method' => $method, 'target' => $path, 'body' => $body]);
            $close = false;
            switch (parse_url($path, PHP_URL_PATH)) {
                case '/drop':
                    $out = '';
                    $close = true;
                    break;
                case '/chunked':
                    $half = intdiv(strlen($json), 2);
                    $out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                        . dechex($half) . "\r\n" . substr($json, 0, $half) . "\r\n"
                        . dechex(strlen($json) - $half) . "\r\n" . substr($json, $half) . "\r\n0\r\n\r\n";
                    break;
                case '/close':
                    $out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                        . 'Content-Length: ' . strlen($json) . "\r\n\r\n" . $json;
                    $close = true;
                    break;
                case '/idle-close':
                    $out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        . 'Content-Length: ' . strlen($json) . "\r\n\r\n" . $json;
                    $close = true;
                    break;
                default:
                    $out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        . 'Content-Length: ' . strlen($json) . "\r\n\r\n" . $json;
            }
            fwrite($s, $out);
            if ($close) {
                fclose($s);
                unset($clients[$k], $buffers[$k], $ids[$k]);
                break;
            }
        }
    }
}
