package protocol

// Request codes of RocketMQ 5's controller mode (RequestCode.java). The
// controller serves the CONTROLLER_* codes and BROKER_HEARTBEAT; a broker
// in controller mode serves NOTIFY_BROKER_ROLE_CHANGED and
// GET_BROKER_EPOCH_CACHE.
const (
	BrokerHeartbeat             int16 = 904
	ControllerAlterSyncStateSet int16 = 1001
	ControllerElectMaster       int16 = 1002
	ControllerRegisterBroker    int16 = 1003
	ControllerGetReplicaInfo    int16 = 1004
	ControllerGetMetadataInfo   int16 = 1005
	ControllerGetSyncStateData  int16 = 1006
	GetBrokerEpochCache         int16 = 1007
	NotifyBrokerRoleChanged     int16 = 1008
	CleanBrokerData             int16 = 1011
	ControllerGetNextBrokerID   int16 = 1012
	ControllerApplyBrokerID     int16 = 1013
)

// Response codes of the controller (ResponseCode.java).
const (
	ControllerFencedMasterEpoch          int16 = 2000
	ControllerFencedSyncStateSetEpoch    int16 = 2001
	ControllerInvalidMaster              int16 = 2002
	ControllerInvalidReplicas            int16 = 2003
	ControllerMasterNotAvailable         int16 = 2004
	ControllerInvalidRequest             int16 = 2005
	ControllerBrokerNotAlive             int16 = 2006
	ControllerNotLeader                  int16 = 2007
	ControllerBrokerMetadataNotExist     int16 = 2008
	ControllerInvalidCleanBrokerMetadata int16 = 2009
	ControllerBrokerNeedToBeRegistered   int16 = 2010
	ControllerMasterStillExist           int16 = 2011
	ControllerElectMasterFailed          int16 = 2012
	ControllerAlterSyncStateSetFailed    int16 = 2013
	ControllerBrokerIDInvalid            int16 = 2014
	ControllerInternalError              int16 = 2015 // CONTROLLER_JRAFT_INTERNAL_ERROR
	ControllerBrokerLiveInfoNotExists    int16 = 2016
)

// NoBrokerID stands for an absent broker id (Java's null Long): no master,
// or "let the controller choose" in ELECT_MASTER.
const NoBrokerID int64 = -1

// FirstBrokerControllerID is the id the first broker of a group applies
// for (MixAll.FIRST_BROKER_CONTROLLER_ID); later ones get the next free id.
const FirstBrokerControllerID int64 = 1

func init() {
	for code, name := range map[int16]string{
		ControllerFencedMasterEpoch:          "CONTROLLER_FENCED_MASTER_EPOCH",
		ControllerFencedSyncStateSetEpoch:    "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
		ControllerInvalidMaster:              "CONTROLLER_INVALID_MASTER",
		ControllerInvalidReplicas:            "CONTROLLER_INVALID_REPLICAS",
		ControllerMasterNotAvailable:         "CONTROLLER_MASTER_NOT_AVAILABLE",
		ControllerInvalidRequest:             "CONTROLLER_INVALID_REQUEST",
		ControllerBrokerNotAlive:             "CONTROLLER_BROKER_NOT_ALIVE",
		ControllerNotLeader:                  "CONTROLLER_NOT_LEADER",
		ControllerBrokerMetadataNotExist:     "CONTROLLER_BROKER_METADATA_NOT_EXIST",
		ControllerInvalidCleanBrokerMetadata: "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
		ControllerBrokerNeedToBeRegistered:   "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
		ControllerMasterStillExist:           "CONTROLLER_MASTER_STILL_EXIST",
		ControllerElectMasterFailed:          "CONTROLLER_ELECT_MASTER_FAILED",
		ControllerAlterSyncStateSetFailed:    "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
		ControllerBrokerIDInvalid:            "CONTROLLER_BROKER_ID_INVALID",
		ControllerInternalError:              "CONTROLLER_JRAFT_INTERNAL_ERROR",
		ControllerBrokerLiveInfoNotExists:    "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
	} {
		responseNames[code] = name
	}
}
