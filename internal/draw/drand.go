package draw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// drandTimeout bounds each call to a drand chain: /info once, then one
// round. Well below the 30 s an instance holds an opening's lease
// (admission's openLease), so a chain that does not answer cannot make the
// opening change hands; a round is asked for only once its time has come,
// so a relay (which holds a request for the next round until it is out)
// answers at once, or within the chain's lag.
const drandTimeout = 10 * time.Second

// maxDrandAnswer bounds what is read of an answer: a round is some 300
// bytes, a chain's info some 500.
const maxDrandAnswer = 64 << 10

// NewDrand is a drand chain as a BeaconSource, through drand's HTTP API
// (v1, as api.drand.sh, drand.cloudflare.com and drand's own relay serve
// it): url is the chain's base URL (https://api.drand.sh/52db…971 for
// quicknet; the default chain at the root), so that url/info is its info
// and url/public/{round} a round. client nil: one with drandTimeout.
//
// What it checks of a round: that it is the round asked for and that its
// randomness is SHA-256 of its signature, as drand defines it. It does not
// check the BLS signature against the chain's public key: that needs a
// pairing library the standard library lacks. Anyone can: the record names
// the chain and the round, and any drand mirror, or drand's own client,
// answers and verifies the same round.
func NewDrand(url string, client *http.Client) BeaconSource {
	if client == nil {
		client = &http.Client{Timeout: drandTimeout}
	}
	return &drand{url: strings.TrimRight(url, "/"), client: client, infos: map[string]drandInfo{}}
}

type drand struct {
	url    string
	client *http.Client

	mu    sync.Mutex
	infos map[string]drandInfo // by chain URL: a chain's info never changes
}

// drandInfo is the part of a chain's GET /info that names its rounds:
// round r is out at genesis + (r-1)*period.
type drandInfo struct {
	Genesis int64  `json:"genesis_time"` // Unix seconds
	Period  int64  `json:"period"`       // seconds
	Hash    string `json:"hash"`
}

func (i drandInfo) timeOf(round uint64) time.Time {
	return time.Unix(i.Genesis, 0).Add(time.Duration(round-1) * time.Duration(i.Period) * time.Second)
}

// Name is the first round whose time is a full period or more after
// opensAt.
func (d *drand) Name(ctx context.Context, opensAt time.Time) (Beacon, error) {
	info, err := d.info(ctx, d.url)
	if err != nil {
		return Beacon{}, err
	}
	// A full period after the opening, not the first round at it: the
	// list closes at opensAt by the store's clock, and a round already
	// out by then (a store a little late to close it) would let whoever
	// closes it know the randomness before the list is fixed.
	return Beacon{URL: d.url, Round: firstRoundAtOrAfter(info, opensAt.Add(time.Duration(info.Period)*time.Second))}, nil
}

func firstRoundAtOrAfter(info drandInfo, at time.Time) uint64 {
	since := at.Sub(time.Unix(info.Genesis, 0))
	if since <= 0 {
		return 1
	}
	period := time.Duration(info.Period) * time.Second
	return 1 + uint64((since+period-1)/period) // ceil: a round at exactly opensAt is the one
}

// Read asks b's chain (b.URL: the chain the commitment named, whatever
// this instance's --draw-beacon says now) for b's round: ErrNotYet while
// the chain's clock says the round cannot be out, without asking, and
// while drand answers that it is not (a relay answers 425 Too Early for a
// round ahead of its clock, drand's own server 404).
func (d *drand) Read(ctx context.Context, b Beacon) (Beacon, error) {
	if b.Round == 0 {
		return Beacon{}, errors.New("drand: round 0 does not exist (rounds start at 1)")
	}
	info, err := d.info(ctx, b.URL)
	if err != nil {
		return Beacon{}, err
	}
	if time.Now().Before(info.timeOf(b.Round)) {
		return Beacon{}, ErrNotYet
	}
	var round struct {
		Round      uint64 `json:"round"`
		Randomness string `json:"randomness"`
		Signature  string `json:"signature"`
	}
	status, err := d.get(ctx, b.URL+"/public/"+strconv.FormatUint(b.Round, 10), &round)
	if status == http.StatusTooEarly || status == http.StatusNotFound {
		return Beacon{}, ErrNotYet
	}
	if err != nil {
		return Beacon{}, err
	}
	sig, err := hex.DecodeString(round.Signature)
	if round.Round != b.Round || err != nil || len(sig) == 0 {
		return Beacon{}, fmt.Errorf("drand %s answered round %d with signature %q for round %d", b.URL, round.Round, round.Signature, b.Round)
	}
	sum := sha256.Sum256(sig)
	randomness := hex.EncodeToString(sum[:])
	// drand's v2 API leaves the randomness out; v1 gives it, and it must be
	// the signature's hash.
	if round.Randomness != "" && !strings.EqualFold(round.Randomness, randomness) {
		return Beacon{}, fmt.Errorf("drand %s round %d: randomness %s is not SHA-256 of its signature (%s)", b.URL, b.Round, round.Randomness, randomness)
	}
	return Beacon{URL: b.URL, Round: b.Round, Randomness: randomness}, nil
}

// info is url's chain info, read once.
func (d *drand) info(ctx context.Context, url string) (drandInfo, error) {
	d.mu.Lock()
	info, ok := d.infos[url]
	d.mu.Unlock()
	if ok {
		return info, nil
	}
	if _, err := d.get(ctx, url+"/info", &info); err != nil {
		return drandInfo{}, err
	}
	if info.Genesis <= 0 || info.Period <= 0 {
		return drandInfo{}, fmt.Errorf("drand %s/info: genesis_time %d and period %d are not a chain's", url, info.Genesis, info.Period)
	}
	d.mu.Lock()
	d.infos[url] = info
	d.mu.Unlock()
	return info, nil
}

// get reads url's JSON answer into v, and answers the status (0 when no
// answer came).
func (d *drand) get(ctx context.Context, url string, v any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, drandTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("drand: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("drand: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDrandAnswer))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("drand GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("drand GET %s: %s %.200s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.StatusCode, fmt.Errorf("drand GET %s: %w", url, err)
	}
	return resp.StatusCode, nil
}
