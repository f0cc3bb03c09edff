package reconcile_test

import (
	"context"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/tidemq/tide/services/kit/reconcile"
)

// Orders vs the provider's statement, checked every 10 minutes, with
// missing captures and status drifts repaired automatically and
// everything else left open for finance. Needs MariaDB and Redis, so it
// has no Output.
func Example() {
	db, err := gorm.Open(mysql.Open("app:pw@tcp(127.0.0.1:3306)/shop?parseTime=true"), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := reconcile.Migrate(ctx, db); err != nil { // or apply reconcile.Migrations (kit/migrate.Pattern)
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	r, err := reconcile.New(db, rdb,
		reconcile.WithRepair(reconcile.MissingOurs, reconcile.StatusMismatch),
		reconcile.WithRegisterer(prometheus.DefaultRegisterer))
	if err != nil {
		log.Fatal(err)
	}
	job := &paymentsJob{db: db, grace: 15 * time.Minute}

	// What would it do?
	rep, err := r.RunOnce(ctx, job, reconcile.RunOptions{DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("found %v, would repair %d", rep.Found, rep.WouldRepair)

	// Scheduled from now on (or kratosmq.Runner("reconcile", r.Start, r.Shutdown)).
	r.Schedule(job, 10*time.Minute)
	r.Start(ctx)
	defer r.Shutdown(ctx)

	open, _ := r.Discrepancies(ctx, job.Name(), reconcile.StatusOpen)
	for _, d := range open {
		log.Printf("%s %s %s", d.Key, d.Class, d.Evidence)
		r.Acknowledge(ctx, d.ID)
	}
}
