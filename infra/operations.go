package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/acs-project/acs/functions"
	"github.com/acs-project/acs/shared/sqsqueue"
)

// Operations are the alarms (to an SNS topic), the dashboard and nothing
// that runs: dead letters, the API's 5xx rate, the functions' errors and
// throttles, the age of the oldest start message and start tasks ending
// ERROR.
type Operations struct {
	Stack     awscdk.Stack
	Topic     awssns.Topic
	Alarms    []awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard
}

// metricsPerAlarm is CloudWatch's limit on the metrics of one alarm's math
// expression: the functions' errors and throttles are summed in groups.
const metricsPerAlarm = 10

// NewOperations makes the operations stack.
func NewOperations(scope constructs.Construct, id string, d *Data, a *API, pr *Provisioning, p Props, sp *awscdk.StackProps) *Operations {
	st := awscdk.NewStack(scope, jsii.String(id), sp)
	o := &Operations{Stack: st}
	o.Topic = awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{DisplayName: jsii.String("ACS alarms")})
	if p.AlarmEmail != "" {
		awssns.NewCfnSubscription(st, jsii.String("AlarmEmail"), &awssns.CfnSubscriptionProps{
			Protocol: jsii.String("email"), TopicArn: o.Topic.TopicArn(), Endpoint: jsii.String(p.AlarmEmail)})
	}
	action := awscloudwatchactions.NewSnsAction(o.Topic)
	five := awscdk.Duration_Minutes(jsii.Number(5))
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	alarm := func(id, what string, m awscloudwatch.IMetric, threshold float64) awscloudwatch.Alarm {
		al := awscloudwatch.NewAlarm(st, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(what),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		al.AddAlarmAction(action)
		o.Alarms = append(o.Alarms, al)
		return al
	}

	dlq := d.DeadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minute})
	alarm("DeadLetters", "start messages reached the dead-letter queue (the reconciler ends their tasks ERROR)", dlq, 0)
	api5xx := a.Rest.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Average"), Period: five})
	alarm("Api5xxRate", "more than 5% of API requests answered 5xx", api5xx, 0.05)
	// A start message older than the longest delay SQS allows plus one
	// provisioner run is stuck.
	oldest := d.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minute})
	alarm("StartQueueAge", "the oldest start message waits longer than a delayed step may", oldest,
		(sqsqueue.MaxDelay + functions.ProvisionerTimeout).Seconds())
	failed := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(metricNamespace),
		MetricName: jsii.String(metricTasksFailed), Statistic: jsii.String("Sum"), Period: five})
	alarm("StartTasksFailed", "start tasks ended ERROR", failed, 0)

	all := append(append([]*Function{a.Authorizer}, a.Routes...), pr.Provisioner, pr.Reconciler)
	var errs, throttles []awscloudwatch.IMetric
	for i := 0; i < len(all); i += metricsPerAlarm {
		group := all[i:min(i+metricsPerAlarm, len(all))]
		for _, kind := range []string{"Errors", "Throttles"} {
			using := map[string]awscloudwatch.IMetric{}
			expr := ""
			for j, f := range group {
				// Ids unique across the groups: a graph shows them together.
				key := fmt.Sprintf("%s%dm%d", strings.ToLower(kind[:1]), i/metricsPerAlarm, j)
				opts := &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}
				if kind == "Errors" {
					using[key] = f.Lambda.MetricErrors(opts)
				} else {
					using[key] = f.Lambda.MetricThrottles(opts)
				}
				if expr != "" {
					expr += "+"
				}
				expr += key
			}
			sum := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{Expression: jsii.String(expr),
				UsingMetrics: &using, Period: five, Label: jsii.String(fmt.Sprintf("%s, functions %d-%d", kind, i+1, i+len(group)))})
			alarm(fmt.Sprintf("Function%s%d", kind, i/metricsPerAlarm+1),
				fmt.Sprintf("Lambda %s of ACS functions %s … %s", kind, group[0].Spec.Name, group[len(group)-1].Spec.Name), sum, 0)
			if kind == "Errors" {
				errs = append(errs, sum)
			} else {
				throttles = append(throttles, sum)
			}
		}
	}

	o.Dashboard = awscloudwatch.NewDashboard(st, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{DashboardName: jsii.String("acs")})
	graph := func(title string, ms ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &ms, Width: jsii.Number(12)})
	}
	o.Dashboard.AddWidgets(
		graph("API requests and errors", a.Rest.MetricCount(&awscloudwatch.MetricOptions{Period: five}),
			a.Rest.MetricClientError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}),
			a.Rest.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five})),
		graph("API latency (p90)", a.Rest.MetricLatency(&awscloudwatch.MetricOptions{Statistic: jsii.String("p90"), Period: five})))
	o.Dashboard.AddWidgets(
		graph("Start queue", d.Queue.MetricApproximateNumberOfMessagesVisible(nil), d.Queue.MetricApproximateNumberOfMessagesNotVisible(nil),
			d.Queue.MetricApproximateNumberOfMessagesDelayed(nil), dlq),
		graph("Start tasks ended ERROR; oldest start message (s)", failed, oldest))
	o.Dashboard.AddWidgets(graph("Function errors", errs...), graph("Function throttles", throttles...))
	o.Dashboard.AddWidgets(
		graph("Provisioner and reconciler duration (p90)",
			pr.Provisioner.Lambda.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p90")}),
			pr.Reconciler.Lambda.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p90")})),
		graph("Authorizer invocations and duration (p90)", a.Authorizer.Lambda.MetricInvocations(nil),
			a.Authorizer.Lambda.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p90")})))
	return o
}
