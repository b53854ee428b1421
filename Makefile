# ACS — the Agent Conversation Service.
#
#   make run     build and start the local all-in-one service (acs serve)
#   make test    install what tests need (scripts/setup.sh), lint, run every test
#   make build   build bin/acs
#   make bench   run the headline benchmarks and print the figures
#   make lint    gofmt and go vet
#   make lambdas build every Lambda function (arm64, provided.al2023) into dist/lambda
#   make image   build the sandbox image (sandbox/Dockerfile) as $ACS_IMAGE (acs-sandbox:dev);
#                ACS_IMAGE_TARGET=browser adds Chromium; needs docker, podman or buildah
#   make synth   build the functions and synthesize the AWS stacks (infra/) into cdk.out; offline
#   make deploy  deploy the AWS stacks (credentials, a bootstrapped account); make destroy deletes them
#                CDK_ARGS passes context and options, e.g. CDK_ARGS="-c runtimeApiUrl=https://…"

GO      ?= go
BIN     := bin/acs
PKGS    := ./...

CDK_ARGS ?=

.PHONY: run test build bench lint setup clean lambdas image synth deploy destroy

build:
	$(GO) build -o $(BIN) ./cmd/acs

run: build
	./$(BIN) serve

setup:
	scripts/setup.sh

lint:
	scripts/lint.sh

test: setup lint
	PKGS="$(PKGS)" scripts/test.sh

bench: build
	scripts/bench.sh

lambdas:
	scripts/build-lambdas.sh

image:
	scripts/build-image.sh

synth:
	scripts/cdk.sh synth $(CDK_ARGS)

deploy:
	scripts/cdk.sh deploy $(CDK_ARGS)

destroy:
	scripts/cdk.sh destroy $(CDK_ARGS)

clean:
	rm -rf bin dist cdk.out
