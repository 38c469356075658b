// Package redisstore keeps the waiting line in Redis. Every step that must
// be atomic is one Lua script (scripts/*.lua), each naming its KEYS, ARGV
// and reply in its header and sharing one prelude (scripts/prelude.lua:
// the clock, the rate in force, where a user stands). The scripts are one
// library of Redis functions, the prelude written once, called with FCALL
// and loaded again when Redis answers "Function not found" (a restart
// without persistence, FUNCTION FLUSH, a Cluster node new to the slot). Admission is planned in Go
// (admission.PlanTick) between a read (tick.lua) and an apply (admit.lua), as
// the embedded store plans it.
//
// The scripts are written in a dialect of Lua that names the queue's keys
// (K.line) and its hash's fields (cfg.rate, adm.moved). go generate
// (keys.go's directive; the generator is internal/luagen) writes each as
// Redis runs it into scripts/generated, and those files are what the store
// embeds and runs: a line number in a Redis error is a line of the file of
// that name there. scripts/README.md describes the dialect.
//
// What crosses between Go and Lua is named on both sides: each script's
// ARGV by the locals it opens with, admit.lua's plan by its JSON fields
// (admitPlan), a reply's kind by a const of reply.go and a local of the
// prelude alike (kindWaiting, WAITING: TestReplyKindsAgree), the pace
// block's fields by reply.go's lists and the prelude's pace
// (TestPaceBlockAgrees).
//
// A queue's lanes (issue 53) keep the line as the public lane, untouched;
// every other lane is a band of scores of one sorted set (keys.go's
// kLanes), its tickets gaps of the public line, and join.lua takes a place
// in one or redeems an access code with it (lanes.go; scripts/README.md
// says why).
//
// # Twins
//
// Each script, and each function of the prelude, has a twin in the
// embedded store (internal/queue/memstore) written apart from it, in Go.
// The conformance suite (internal/queue/storetest), run on both stores,
// holds each pair equal; a change to one side is a change to its twin,
// and these cases show it (RandomDrawIsUniform, OpeningOrderIsUniform and
// OpeningOfTenThousandMatchesItsRecord are storetest.RunDistributions',
// asked once of each implementation).
// Where the waiting page works out the same itself (page: a function of
// internal/web's static/waiting.js), from the front document far from the
// front, it is a third twin: the place cases (storetest's
// testdata/places.json) hold the stores to them (PlaceIsTheCasesRank),
// Go's one rule (queue.Position, Pace.Estimate) in queue/front's
// TestPlacesAreTheCases, and the page's, through node, in internal/httpapi's
// TestThePagePlacesAsTheServerDoes:
//
//	Lua (scripts/)               memstore                           page (web/static/waiting.js)  storetest case
//	enter.lua                    Store.Enter, state.enter                                         ConcurrentEntersGetPositions1ToN, ReEntryKeepsPosition, CapacityRefusesNewcomersNotMembers, SoldOutStopsTheLineAndRestockResumesIt
//	enter_shadow.lua             state.enterShadow                                                ShadowPlaceIsAnsweredAsItsOwn, ShadowLineNeverTakesPeoplesCapacity, SuspectsSoldOutPausedAndOpeningAsPeople
//	suspects.lua                 Store.Suspects                                                   ShadowPlaceIsAnsweredAsItsOwn, DeletedQueueForgetsItsSuspects
//	clear_suspect.lua            Store.ClearSuspect                                               ClearedSuspectStandsWhereItArrived, ClearedSuspectBehindTheAdmittedGoesFirst, ClearedSuspectWaitsForTheOpeningAsPeople, ClearedSuspectIsNoNoShow
//	status.lua                   Store.Status                       placeFromFront                SnapshotAgreesWithStatus, NoShowBackAskingIsSeenAtOnce, SoldOutStopsTheLineAndRestockResumesIt, PlaceIsTheCasesRank
//	snapshot.lua                 Store.Snapshot                     placeFromFront                SnapshotAgreesWithStatus, SnapshotTooManyLeaversAnswersNoOne, SoldOutStopsTheLineAndRestockResumesIt, PlaceIsTheCasesRank
//	leave.lua                    Store.Leave, state.leave                                         LeavingClosesTheGap, LeaveGivesBackToken, LanesStatsAndLeave
//	tick.lua, admit.lua          Store.Admit (admission.PlanTick)                                 AdmissionFollowsEntryOrder, AdmissionNeverExceedsBudget, AdmitCalledAgainWithItsTokensAdmitsNobody, NoShowsSkippedPresentAdmittedInOrder, HiddenPageSkippedOnlyAtItsLongerTime, ShadowAdmitsLastOnlyOnceTheLineIsEmpty, ShadowPlaceIsInNoDraw, LanesShareTicksWithinOnePerson, LanesEmptyLaneGivesItsShare, LanesWaitsSayTheLane, ApartAfterASurprise, TestAdmissionReadsTheRangeKept
//	admit.lua's draw             state.draw                                                       RandomDrawIsUniform, RandomDrawAdmitsEachOnce, RandomSkipsNoShows, RandomSkipsHiddenPagesAtTheirTime, SwitchingBetweenFIFOAndRandom, LanesDrawWithinTheLane, LanesWaitsSayTheLane
//	admit.lua's pop, issue       state.pop, state.issue                                           AdmissionFollowsEntryOrder, NoShowsSkippedPresentAdmittedInOrder
//	admit_now.lua                Store.AdmitNow                                                   QuietLineLetsStraightIn, AdmitNowSpendsTheNextTicksBudget, PassthroughReadyAtOnceWithinMaxActiveTokens
//	sweep.lua                    Store.Sweep                                                      SweepForgetsWhatLapsedAndChangesNoAnswer
//	begin_use.lua, end_use.lua   Store.BeginUse, Store.EndUse                                     TokenUseRules, ConcurrentUseOfOneToken, ReleasedEntryFreesItsSlot
//	extend.lua                   Store.Extend                                                     SlidingSessionLastsWhileUsedUpToItsMax
//	stats.lua                    Store.Stats                                                      Stats, StatsAddUp, StatsReadExpiryWithoutSweeping, ChangesAreStampedWhenTheyHappen, StatsShowAStampWithItsState, LanesStatsAndLeave
//	put_config.lua               Store.PutConfig, state.putConfig                                 ConfigRoundTrip, EpochNamesTheLine, ShorterIntervalAppliesAtOnce, AdaptiveRateNeverLeavesItsBounds, ChangesAreStampedWhenTheyHappen
//	seen.lua                     Store.Seen                                                       NoShowsSkippedPresentAdmittedInOrder, HiddenPageSkippedOnlyAtItsLongerTime, LaneMarksAsTheLine
//	fold_rate.lua, set_rate.lua  Store.FoldRate, Store.SetRate                                    AdaptiveRateOneDecisionPerWindow, AdaptiveRateRemembersItsLastDecision
//	open_due.lua, place.lua      Store.OpenDue, Store.Place                                       OpeningOrderIsUniform, OpeningPlacesInTheDrawnOrder, OpeningReservesTicketsAheadOfLaterEntries, OpeningPlacesUsersAtTheirReservedTickets, OpeningTakenOverPlacesTheOrderDrawn, LanesOpeningPlacesInTheLane
//	commit_draw.lua              Store.CommitDraw                                                 CommitDrawKeepsOneCommitmentPerOpening
//	save_draw.lua                Store.SaveDraw                                                   SaveDrawKeepsTheFirstRecordUnderTheLease, OpeningTakenOverPlacesTheOrderDrawn, OpeningOfTenThousandMatchesItsRecord
//	first_use.lua                Store.FirstUse                                                   FirstUseIsOnce
//	roll.lua                     Store.Roll, Store.roll                                           RowsAddUpRaceFreeAndLapse
//	rows.lua                     Store.Rollups                                                    RowsAddUpRaceFreeAndLapse
//	set_stock.lua                Store.SetStock                                                   SaleCountsOnlyLowerTheStock, SoldOutStopsTheLineAndRestockResumesIt, AdmitPerUnitCapsLiveTokensByTheStock, ChangesAreStampedWhenTheyHappen
//	put_token.lua                Store.PutToken                                                   TestTokens
//	delete_token.lua             Store.DeleteToken                                                TestTokens
//	touch_token.lua              Store.TouchToken                                                 TestTokens
//	tokens.lua                   Store.TokenByHash, Store.Tokens                                  TestTokens
//	fold_admission.lua           none: Redis's own upgrade                                        TestUpgradeFoldsTheOldAdmissionHash (this package)
//	join.lua                     Store.Join                                                       LanesPlaceByRankWithinTheLane, LanesCodeRules, LanesSingleUseCodeRedeemedOnce, LanesPositionNeverRises, LanesCodeWhilePlacingKeepsThePreQueue, TestCodesAreKeptAsHashesAndRedeemedOnce
//	add_codes.lua                Store.AddCodes                                                   LanesCodeRules, LanesCodeUsesAreChecked, TestCodesAreKeptAsHashesAndRedeemedOnce
//	put_handoff.lua              Store.PutHandoff, state.handable                                 HandoffMovesTheTicket, HandoffCodesAreSingleUseAndLapse, HandoffCarriesTheMarks
//	claim_handoff.lua            Store.ClaimHandoff, state.move                                   HandoffMovesTheTicket, HandoffOfReadyKeepsTheToken, HandoffIntoAPlaceChangesNothing, HandoffCodesAreSingleUseAndLapse, HandoffCarriesTheMarks, HandoffCarriesTheSeenMark, HandoffNoTwoSessionsHoldThePlace, HandoffRacingAdmissionLeavesOneReady
//	prelude's laneStanding       Store.Status                                                     LanesPlaceByRankWithinTheLane, LanesOpeningPlacesInTheLane, TestLanePlacesAreBandsOfOneSet
//	prelude's laneId, scoreText  none: bands of one set (keys.go)                                 TestLanePlacesAreBandsOfOneSet
//	prelude's laneShare          Store.Status                                                     LanesEmptyLaneGivesItsShare, TestAdmissionSplitsByShares
//	prelude's everyone           state.waitingAll                                                 LanesStalledIsTheWholeLine
//	prelude's inForce            Store.Join, state.redeem                                         LanesCodeOfALaneNotInForceIsInvalid, LanesPlaceByRankWithinTheLane
//	prelude's config             Store.Config, state.cfg                                          UnknownQueue; TestDamagedConfigWritesNothing (this package)
//	prelude's clock              New's now                                                        ClockSteppedBackDelaysOneIntervalAtMost
//	prelude's rateInForce        state.rateInForce                                                AdaptiveRateNeverLeavesItsBounds
//	prelude's shown, passing     state.enter (queue.Pace.Estimate)  estimate                      PlaceKeepsWhenAndTheWaitShown, EstimateIsZeroOnlyWithinWhatTheNextTickLetsIn, PlaceIsTheCasesRank, RangeKeptAtJoinIsTheOneShown, RangeKeptInALaneIsTheLanes, UnknownAtJoinKeepsNoRange, TestPlaceKeepsTheEstimateTold
//	prelude's secs               none: Go's Duration.Seconds                                      TestPlaceKeepsTheEstimateTold
//	prelude's pace               state.pace (queue.LinePace)                                      SnapshotAgreesWithStatus, StalledWhenTheFrontStandsStill
//	prelude's opening, unplaced  state.pending, state.unplaced                                    OpeningReservesTicketsAheadOfLaterEntries
//	prelude's markSeen           state.markSeen                                                   NoShowBackAskingIsSeenAtOnce, HiddenPageSkippedOnlyAtItsLongerTime
//	prelude's standing           state.standing                                                   ReEntryKeepsPosition, ReadyUserEnteringStaysReady
//	prelude's shadowStanding     state.shadowStanding                                             ShadowPlaceIsAnsweredAsItsOwn, ClearedSuspectStandsWhereItArrived
//	prelude's behindOf           shadowPlace.Behind                                               ShadowPlaceIsAnsweredAsItsOwn
//	prelude's shadowTurn         none: one lock plans and applies                                 ShadowAdmitsLastOnlyOnceTheLineIsEmpty, TestShadowAdmitLosesItsTurn
//	prelude's unmark             state.removeFromLine, shadow.take                                ClearedSuspectBehindTheAdmittedGoesFirst, ShadowAdmitsLastOnlyOnceTheLineIsEmpty
//	prelude's lineHead           line.headTicket                                                  ClearedSuspectBehindTheAdmittedGoesFirst
//	prelude's liveToken          sameToken, in BeginUse and Extend                                TokenUseRules, TokensExpireAtTTL
//	prelude's dropToken          state.dropToken                                                  StatsAddUp, LeaveGivesBackToken
//	prelude's storedCommitment   none: keeps draw.Committed                                       CommitDrawKeepsOneCommitmentPerOpening, SaveDrawKeepsTheFirstRecordUnderTheLease
//	prelude's epochOf            none: keeps draw.Committed                                       CommitDrawKeepsOneCommitmentPerOpening
package redisstore
