package draw_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/waitroom/waitroom/internal/draw"
)

// The test vectors of docs/draws.md ("Test vectors"), written out there
// and here by hand: a change to the encoding fails this test before it
// changes any published record's meaning. testdata/vector-*.json are the
// two records, which the Python verifier checks too (TestPythonAgrees).
var (
	vectorSeed    = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	vectorOpensAt = time.Date(2026, 12, 24, 18, 0, 0, 0, time.UTC) // 1798135200000 ms
	vectorKey     = "waitroom test vectors"                        // Participants' key
	// user, salt, id in queue "sale"
	vectorPeople = [][3]string{
		{"alice", "5a5c92ad365175203f57372b78aab306", "02db794b6220abbc77e0da14fb4abadb"},
		{"bob", "a8e4469652a74297699b56d5b8adf40d", "b5301b4ff9293521e23c47d1879e87b4"},
		{"carol", "74eb700dd3fe53e4827e13924c9e8196", "146bca3edcb4a98a9b2fe2bdb7bdc320"},
		{"dave", "daf41997355adf43d5de901b109cdd70", "8be5510f9106dc6f7c4d17202eb9bc68"},
		{"erin", "49e4a688efa3f87435ca069b9bea613b", "63dc3498d4b986cd8c54ba232076e679"},
		{"frank", "1ecf8e0e18babd45f495abaa09358e34", "cf6370488c95e2f3a1bfc575f6b8571c"},
		{"grace", "df852573eab01cae796451ede1864438", "86ecb548daaefffe55764b41e91fba63"},
	}
	vectorBeacon = draw.Beacon{
		URL:        "https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
		Round:      35110612,
		Randomness: "9a1d6c4fb2e3a0785f1c2d3e4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978",
	}
	vectorParticipantsHash = "6d08fa68afceff788b5c5949d08ad29fb43d38af0e8d3d9ac84245f626a94141"
)

func TestVectors(t *testing.T) {
	p := draw.NewParticipants([]byte(vectorKey))
	var ids []string
	for _, person := range vectorPeople {
		got := p.Of("sale", person[0])
		if want := (draw.Participant{Salt: person[1], ID: person[2]}); got != want {
			t.Errorf("%s: %+v, want %+v", person[0], got, want)
		}
		if id := draw.ParticipantID(person[1], person[0]); id != person[2] {
			t.Errorf("ParticipantID(%s, %s) = %s, want %s", person[1], person[0], id, person[2])
		}
		ids = append(ids, person[2])
	}
	seed, err := draw.ParseSeed(vectorSeed)
	if err != nil {
		t.Fatal(err)
	}
	named := &draw.Beacon{URL: vectorBeacon.URL, Round: vectorBeacon.Round}
	for _, tt := range []struct {
		name, file            string
		named, read           *draw.Beacon
		commitment, finalSeed string
		order                 []string
	}{
		{"without a beacon", "testdata/vector-without-beacon.json", nil, nil,
			"b275cbb8372479c94daad31a9f99194039f52adc8f91fc212f96cd2f90c6ef73",
			"4120ba965d5706707fd7e527115b90b77dffe6a28cf0b4d1140160dbb9c7a59f",
			[]string{"63dc3498d4b986cd8c54ba232076e679", "b5301b4ff9293521e23c47d1879e87b4", "146bca3edcb4a98a9b2fe2bdb7bdc320",
				"8be5510f9106dc6f7c4d17202eb9bc68", "86ecb548daaefffe55764b41e91fba63", "cf6370488c95e2f3a1bfc575f6b8571c",
				"02db794b6220abbc77e0da14fb4abadb"}},
		{"with a beacon", "testdata/vector-with-beacon.json", named, &vectorBeacon,
			"e16ad10c36cd5170f36d158b48159926c33b85291feb17d3b7afa0bf0c2d44d7",
			"f2ee7e468e98f2da1decf47f63e5902f8beb2e0f2b2ec8c5cbdf9fc6630af546",
			[]string{"146bca3edcb4a98a9b2fe2bdb7bdc320", "86ecb548daaefffe55764b41e91fba63", "8be5510f9106dc6f7c4d17202eb9bc68",
				"cf6370488c95e2f3a1bfc575f6b8571c", "b5301b4ff9293521e23c47d1879e87b4", "02db794b6220abbc77e0da14fb4abadb",
				"63dc3498d4b986cd8c54ba232076e679"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if c := draw.Commitment(seed, "sale", vectorOpensAt, tt.named); c != tt.commitment {
				t.Errorf("commitment %s, want %s", c, tt.commitment)
			}
			sorted := slices.Sorted(slices.Values(ids))
			if h := draw.ParticipantsHash(sorted); h != vectorParticipantsHash {
				t.Errorf("participants hash %s, want %s", h, vectorParticipantsHash)
			}
			randomness := ""
			if tt.read != nil {
				randomness = tt.read.Randomness
			}
			if f := draw.FinalSeed(seed, vectorParticipantsHash, randomness); f != tt.finalSeed {
				t.Errorf("final seed %s, want %s", f, tt.finalSeed)
			}
			order, err := draw.Order(tt.finalSeed, sorted)
			if err != nil || !slices.Equal(order, tt.order) {
				t.Errorf("order %v (%v), want %v", order, err, tt.order)
			}
			// The record drawn from them is the one in testdata, field by field.
			c := draw.NewCommittedWith(seed, "sale", vectorOpensAt, tt.named)
			r, err := draw.Draw(c, ids, tt.read, 1001, time.Date(2026, 12, 24, 18, 0, 3, 250_000_000, time.UTC))
			if err != nil {
				t.Fatal(err)
			}
			kept, err := draw.ReadRecord(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(kept, r); diff != "" {
				t.Errorf("%s differs from the record drawn now (-file +drawn):\n%s", tt.file, diff)
			}
			if err := draw.Verify(kept); err != nil {
				t.Errorf("Verify(%s): %v", tt.file, err)
			}
			b, _ := json.MarshalIndent(r, "", "  ")
			if file, _ := os.ReadFile(tt.file); string(file) != string(b)+"\n" {
				t.Errorf("%s is not the record's JSON as Go writes it:\n%s", tt.file, b)
			}
		})
	}
}
