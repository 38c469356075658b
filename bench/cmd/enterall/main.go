// Command enterall enters every user of a JWT file (one a line, as
// bench/jwts prints them) into a queue over HTTP, -conns at a time, so that
// bench/http.sh's status run polls users who are all in line, as those who
// poll are: entering again keeps a place, so users already in line cost one
// request each and change nothing.
//
//	go run ./bench/cmd/enterall -jwts jwts.txt -url http://127.0.0.1:8080/api/v1/queues/bench/entries
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
)

func main() {
	jwts := flag.String("jwts", "", "file of user JWTs, one a line")
	url := flag.String("url", "", "the queue's entries URL")
	conns := flag.Int("conns", 32, "requests at a time")
	flag.Parse()
	if *jwts == "" || *url == "" {
		fmt.Fprintln(os.Stderr, "enterall: -jwts and -url are required")
		os.Exit(2)
	}
	f, err := os.Open(*jwts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "enterall:", err)
		os.Exit(1)
	}
	defer f.Close()
	users := make(chan string)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conns}}
	var entered, refused atomic.Int64
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			for jwt := range users {
				req, _ := http.NewRequest("POST", *url, nil)
				req.Header.Set("Authorization", "Bearer "+jwt)
				resp, err := client.Do(req)
				if err != nil {
					refused.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					entered.Add(1)
				} else {
					refused.Add(1)
				}
			}
		})
	}
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 0, 4096), 1<<20)
	for lines.Scan() {
		users <- lines.Text()
	}
	close(users)
	wg.Wait()
	fmt.Printf("enterall: %d in line, %d refused\n", entered.Load(), refused.Load())
	if refused.Load() > 0 || lines.Err() != nil {
		os.Exit(1)
	}
}
