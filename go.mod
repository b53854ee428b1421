module github.com/acs-project/acs

go 1.26.0

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/creack/pty v1.1.24 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/openai/openai-go/v3 v3.96.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.etcd.io/bbolt v1.4.3 // indirect
	golang.org/x/sys v0.48.0 // indirect
	mvdan.cc/sh/v3 v3.12.0 // indirect
)
