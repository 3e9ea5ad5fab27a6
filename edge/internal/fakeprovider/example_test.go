package fakeprovider_test

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"weir.dev/edge/internal/fakeprovider"
)

// A test scripts the provider, sends its requests, and then checks what the
// provider received.
func Example() {
	fp := fakeprovider.New(fakeprovider.Options{Limits: fakeprovider.Limits{RPM: 60}})
	base, err := fp.Start()
	if err != nil {
		panic(err)
	}
	defer fp.Close()

	// The first request is refused with a 429 naming two seconds; the ones
	// after it are answered as usual.
	fp.Enqueue(fakeprovider.RateLimited(2 * time.Second))

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("retry-after-ms"), resp.Header.Get("x-ratelimit-remaining-requests"))
	}
	last, _ := fp.LastRequest()
	fmt.Println(fp.Count("/v1/chat/completions"), last.Model, last.Header.Get("Authorization"))
	// Output:
	// 429 2000 60
	// 200  59
	// 2 gpt-4o Bearer sk-test
}
