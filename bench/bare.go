package bench

import (
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
)

// bareGateway is the HTTP floor: the least lock gateway, net/http,
// encoding/json and go-redis with its default pool. POST /locks/{r} does
// SET NX PX, DELETE /locks/{r} the floor's compare-and-delete
// (unlock.lua); no fencing tokens, waiters, metrics, auth or logs. Its
// phase measures what an HTTP exchange and a JSON body cost on this
// machine, so that the gateway's ratio to it is what leasegate adds.
type bareGateway struct {
	rdb    *redis.Client
	srv    *http.Server
	ln     net.Listener
	served chan error
}

// bareBody is both requests' body; the release sends only the owner.
type bareBody struct {
	Owner      string `json:"owner"`
	TTLSeconds int64  `json:"ttl_seconds"`
}

func startBare(opt *redis.Options) (*bareGateway, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := *opt
	b := &bareGateway{rdb: redis.NewClient(&o), ln: ln, served: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /locks/{r}", b.acquire)
	mux.HandleFunc("DELETE /locks/{r}", b.release)
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { b.served <- b.srv.Serve(ln) }()
	return b, nil
}

// decode reads the body; false when it answered 400.
func decode(w http.ResponseWriter, r *http.Request, in *bareBody) bool {
	if err := json.NewDecoder(r.Body).Decode(in); err != nil || in.Owner == "" {
		http.Error(w, "bad body", http.StatusBadRequest)
		return false
	}
	return true
}

func (b *bareGateway) acquire(w http.ResponseWriter, r *http.Request) {
	var in bareBody
	if !decode(w, r, &in) {
		return
	}
	if in.TTLSeconds < 1 {
		http.Error(w, "bad ttl_seconds", http.StatusBadRequest)
		return
	}
	ok, err := b.rdb.SetNX(r.Context(), "bare:"+r.PathValue("r"), in.Owner, time.Duration(in.TTLSeconds)*time.Second).Result()
	if err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Acquired bool `json:"acquired"`
	}{ok})
}

func (b *bareGateway) release(w http.ResponseWriter, r *http.Request) {
	var in bareBody
	if !decode(w, r, &in) {
		return
	}
	n, err := unlock.Run(r.Context(), b.rdb, []string{"bare:" + r.PathValue("r")}, in.Owner).Int64()
	switch {
	case err != nil:
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
	case n != 1:
		http.Error(w, "not held", http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (b *bareGateway) url() string { return "http://" + b.ln.Addr().String() }

func (b *bareGateway) close() {
	_ = b.srv.Close()
	<-b.served // http.ErrServerClosed
	_ = b.rdb.Close()
}
