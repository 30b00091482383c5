#!/usr/bin/env python3
"""Generate the made-up KOLD-format sample, the demo comments and the test fixtures.

Run from anywhere (standard library only, deterministic):

    python3 data/sample/make_sample.py

Writes
    data/sample/kold_sample.json   generated records in the KOLD v1 layout
    data/sample/comments.txt       unlabeled demo comments, one per line
    tests/fixtures/kold_small.json hand-written records covering the span shapes
    tests/fixtures/kold_bad.json   two deliberately malformed records

Every title, comment and annotator id below was made up for this project; nothing
is taken from KOLD or any other corpus. Raw annotator indices follow KOLD: the end
index is INCLUSIVE. The gold fields (OFF, TGT, GRP, OFF_span, TGT_span) are derived
from the three raw annotations by `gold_from_raw` and checked before writing.
"""
from __future__ import annotations

import datetime
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PATH = ROOT / "data" / "sample" / "kold_sample.json"
COMMENTS_PATH = ROOT / "data" / "sample" / "comments.txt"
SMALL_PATH = ROOT / "tests" / "fixtures" / "kold_small.json"
BAD_PATH = ROOT / "tests" / "fixtures" / "kold_bad.json"

SEED = 20220216
N_RECORDS = 900
N_OFFENSIVE = 405  # 45 %
# How the offensive records split by target type.
N_BY_KIND = {"group": 182, "individual": 114, "others": 41, "untargeted": 68}
SPAN_SEPARATOR = "|"  # joins the texts of several gold spans in OFF_span / TGT_span

Span = tuple[int, int]  # end-exclusive inside this script

# --------------------------------------------------------------------------------------
# Target groups: GRP name -> the raw (Korean, hierarchical) name annotators pick.
# Feminists sit under "gender" in the raw names but under "others" in GRP, as in KOLD.
GROUPS: dict[str, str] = {
    "gender-women": "집단-성 정체성-여성",
    "gender-men": "집단-성 정체성-남성",
    "gender-lgbtq+": "집단-성 정체성-성소수자",
    "race-chinese": "집단-인종 및 국적-중국인",
    "race-black": "집단-인종 및 국적-흑인",
    "race-korean-chinese": "집단-인종 및 국적-조선족",
    "race-indian": "집단-인종 및 국적-인도인",
    "race-southeast-asian": "집단-인종 및 국적-동남아시아인",
    "race-others": "집단-인종 및 국적-기타",
    "politics-progressive": "집단-정치 성향-진보",
    "politics-conservative": "집단-정치 성향-보수",
    "religion-christian": "집단-종교-기독교",
    "religion-muslim": "집단-종교-이슬람",
    "religion-catholic": "집단-종교-천주교",
    "religion-buddhist": "집단-종교-불교",
    "religion-others": "집단-종교-기타",
    "others-feminist": "집단-성 정체성-페미니스트",
    "others-age": "집단-기타-연령",
    "others-disabled": "집단-기타-장애인",
    "others-diseased": "집단-기타-질병",
    "others-others": "집단-기타-기타",
}
RAW_TO_GRP = {raw: grp for grp, raw in GROUPS.items()}
UNKNOWN_GROUP = "알 수 없음"  # raw "don't know"; never counts towards GRP
TARGET_TYPES = ("individual", "group", "others", "untargeted")
NOT_SPECIFIED = "not specified"

ANNOTATOR_IDS = [
    301127, 301458, 302093, 302511, 303370, 303842, 304106, 304659,
    305021, 305734, 306288, 306915, 307340, 307862, 308193, 308770,
    309052, 309613, 310247, 310898, 311426, 311957, 312380, 312846,
]

# --------------------------------------------------------------------------------------
# Building blocks (all made up).
# (title, topic, source)
TITLES: list[tuple[str, str, str]] = [
    ("국회 예산안 처리 또 무산…여야 책임 공방", "politics", "naver_news"),
    ("새 정당 창당 선언, 지지율은 아직 한 자릿수", "politics", "naver_news"),
    ("지방선거 앞두고 후보 단일화 논의 본격화", "politics", "naver_news"),
    ("장관 후보자 청문회, 자녀 특혜 의혹 집중 질의", "politics", "naver_news"),
    ("[시사토크] 이번 총선 판세 총정리", "politics", "youtube"),
    ("외국인 노동자 고용 허가 확대…농촌 일손 숨통", "race", "naver_news"),
    ("난민 신청자 심사 결과 발표, 인정률 1%대", "race", "naver_news"),
    ("중국 관광객 다시 늘어나…명동 상권 기대감", "race", "naver_news"),
    ("다문화 가정 자녀 학교 적응 지원 강화", "race", "naver_news"),
    ("외국인 밀집 지역 치안 대책 주민 간담회", "race", "youtube"),
    ("여성가족부 개편안 두고 찬반 팽팽", "gender", "naver_news"),
    ("남성 육아휴직 사용률 역대 최고", "gender", "naver_news"),
    ("페미니즘 강연 취소 논란…대학가 시끌", "gender", "naver_news"),
    ("퀴어문화축제 광장 사용 신청 승인", "gender", "naver_news"),
    ("군 가산점제 부활 논의 다시 수면 위로", "gender", "youtube"),
    ("대형 교회 집회 강행에 지자체 고발", "religion", "naver_news"),
    ("이슬람 사원 건축 놓고 주민 갈등 장기화", "religion", "naver_news"),
    ("사찰 문화재 관람료 폐지 결정", "religion", "naver_news"),
    ("성당 성탄 미사 온라인 생중계", "religion", "youtube"),
    ("신흥 종교 단체 포교 활동 주의보", "religion", "naver_news"),
    ("인기 배우, 학폭 의혹에 소속사 '사실무근'", "celebrity", "naver_news"),
    ("아이돌 그룹 새 앨범 발매 첫날 판매 신기록", "celebrity", "youtube"),
    ("유명 유튜버 뒷광고 사과 영상 공개", "celebrity", "youtube"),
    ("예능 프로그램 조작 논란에 방송사 공식 사과", "celebrity", "naver_news"),
    ("국가대표 축구팀, 월드컵 예선 극적인 역전승", "sports", "naver_news"),
    ("프로야구 개막전 매진…관중 함성 돌아왔다", "sports", "naver_news"),
    ("올림픽 양궁 대표팀 단체전 금메달", "sports", "youtube"),
    ("심판 오심 논란에 구단 공식 항의", "sports", "naver_news"),
    ("내일 전국 장맛비…시간당 50mm 강한 비", "weather", "naver_news"),
    ("올겨울 첫 한파특보, 체감온도 영하 15도", "weather", "naver_news"),
    ("봄꽃 개화 시기 평년보다 일주일 빨라", "weather", "youtube"),
    ("국산 AI 반도체 양산 돌입…글로벌 경쟁 본격화", "tech", "naver_news"),
    ("새 스마트폰 공개, 가격은 동결", "tech", "youtube"),
    ("전기차 충전소 부족 문제 여전", "tech", "naver_news"),
    ("아파트값 하락세 지속…거래 절벽", "economy", "naver_news"),
    ("최저임금 인상 폭 두고 노사 이견", "economy", "naver_news"),
    ("지하철 무임승차 연령 상향 논의", "society", "naver_news"),
    ("장애인 단체 출근길 지하철 시위 재개", "society", "naver_news"),
    ("감염병 확진자 동선 공개 범위 축소", "society", "naver_news"),
    ("요즘 MZ세대 직장 문화, 어떻게 생각하세요?", "society", "youtube"),
    ("[브이로그] 시골 할머니 댁에서 보낸 일주일", "daily", "youtube"),
    ("[LIVE] 오늘의 주요 뉴스 정리", "daily", "youtube"),
]

# Group mentions (the target span) and the GRP names they stand for, by topic.
GROUP_TARGETS: dict[str, list[tuple[str, list[str]]]] = {
    "politics": [
        ("좌파들", ["politics-progressive"]), ("좌빨들", ["politics-progressive"]),
        ("수꼴들", ["politics-conservative"]), ("보수 꼰대들", ["politics-conservative", "others-age"]),
        ("좌파 페미들", ["politics-progressive", "others-feminist"]), ("진보 놈들", ["politics-progressive"]),
        ("태극기 노인들", ["politics-conservative", "others-age"]),
    ],
    "race": [
        ("조선족들", ["race-korean-chinese"]), ("중국인들", ["race-chinese"]), ("중국놈들", ["race-chinese"]),
        ("흑인들", ["race-black"]), ("인도 놈들", ["race-indian"]), ("인도인들", ["race-indian"]), ("동남아 애들", ["race-southeast-asian"]),
        ("베트남 사람들", ["race-southeast-asian"]), ("난민들", ["race-others"]), ("외노자들", ["race-others"]),
        ("중국 조선족들", ["race-korean-chinese", "race-chinese"]),
    ],
    "gender": [
        ("페미들", ["others-feminist"]), ("꼴페미들", ["others-feminist"]), ("한남들", ["gender-men"]),
        ("여자들", ["gender-women"]), ("남자들", ["gender-men"]), ("게이들", ["gender-lgbtq+"]),
        ("동성애자들", ["gender-lgbtq+"]), ("페미 여자들", ["gender-women", "others-feminist"]),
    ],
    "religion": [
        ("개독들", ["religion-christian"]), ("목사들", ["religion-christian"]), ("무슬림들", ["religion-muslim"]), ("이슬람 놈들", ["religion-muslim"]),
        ("신부들", ["religion-catholic"]), ("성당 다니는 것들", ["religion-catholic"]), ("땡중들", ["religion-buddhist"]), ("절 스님들", ["religion-buddhist"]), ("신천지들", ["religion-others"]),
        ("사이비 신도들", ["religion-others"]), ("개독 목사들", ["religion-christian"]),
    ],
    "society": [
        ("틀딱들", ["others-age"]), ("노인네들", ["others-age"]), ("잼민이들", ["others-age"]),
        ("MZ들", ["others-age"]), ("장애인들", ["others-disabled"]), ("시위하는 장애인들", ["others-disabled"]), ("확진자들", ["others-diseased"]),
        ("환자들", ["others-diseased"]), ("공무원들", ["others-others"]),
    ],
    "celebrity": [("연예인들", ["others-others"]), ("아이돌 빠순이들", ["others-others", "gender-women"])],
    "sports": [("축구 팬들", ["others-others"]), ("흑인 선수들", ["race-black"])],
    "economy": [("노조원들", ["others-others"]), ("집주인들", ["others-others"])],
}

INDIVIDUAL_TARGETS: dict[str, list[str]] = {
    "politics": ["그 의원", "저 장관 후보자", "대변인", "저 시장", "당대표"],
    "celebrity": ["저 배우", "그 유튜버", "이 가수", "저 MC", "담당 PD"],
    "sports": ["저 심판", "그 감독", "저 선수", "해설위원"],
    "any": ["이 기자", "기자", "윗댓", "댓글 쓴 놈", "저 사람", "진행자", "글쓴이"],
}
DEROGATORY = {"댓글 쓴 놈"}  # never used in a benign comment
OTHERS_TARGETS = ["이 방송국", "언론", "정부", "국회", "저 소속사", "구단", "이 회사", "경찰", "기상청", "교육청"]

# Offensive phrases that follow a target (+ particle): the offensive span.
INSULT_PREDICATES = [
    "진짜 쓰레기다", "쓰레기 같네", "한심하다", "한심하기 짝이 없다", "미쳤냐", "미친 거 아님?",
    "꺼져라", "좀 꺼져", "멍청하다", "멍청한 소리만 하네", "머리에 뭐가 들었냐", "뇌가 없냐",
    "개념이 없다", "역겹다", "토 나온다", "수준 진짜 바닥이다", "제정신이냐", "정신병자 같다",
    "주제도 모르고 나대네", "입 닥쳐라", "입 좀 다물어", "나라 망신이다", "답이 없다", "구제불능이다",
    "꼴값 떤다", "가지가지 한다", "양심 없네", "뻔뻔하기 짝이 없다", "인간 쓰레기다", "병신 같다",
    "찌질하다", "징그럽다", "지능이 의심된다", "무식하다", "그냥 사라져라", "얼굴 보기도 싫다",
    "혐오스럽다", "돌았네", "밥맛 떨어진다", "하는 짓마다 꼴사납다",
]
IMPERATIVES = {"꺼져라", "좀 꺼져", "입 닥쳐라", "입 좀 다물어", "그냥 사라져라", "한국에서 나가라",
               "자기 나라로 돌아가라"}
# Only natural after nationality / ethnicity targets.
RACE_PREDICATES = ["한국에서 나가라", "자기 나라로 돌아가라", "다 쫓아내야 된다"]
# Offensive modifiers that come before a group or organisation mention.
INSULT_MODIFIERS = [
    "쓰레기 같은", "한심한", "미친", "멍청한", "개념 없는", "역겨운", "무식한", "뻔뻔한",
    "찌질한", "정신 나간", "답 없는", "양심 없는", "덜떨어진", "골빈",
]
# Untargeted profanity.
PROFANITY = [
    "아 씨발", "씨발 진짜", "존나 짜증나네", "개빡치네", "ㅅㅂ", "ㅆㅂ 뭐야 이게", "좆같네",
    "개같은 상황", "미친 진짜", "염병", "ㅈㄴ 어이없네", "아오 빡쳐", "개짜증", "좆같은 세상",
]
# Their benign twins: benign comments are also written in the shapes of the offensive ones
# ("저 배우는 진짜 멋있다" beside "저 배우는 진짜 한심하다"), so the word order gives nothing away.
PRAISE_PREDICATES = [
    "진짜 멋있다", "멋지네", "대단하다", "든든하기 짝이 없다", "성실하다", "열심히 하네", "말 잘하네", "연기 잘하네",
    "센스 있네", "믿음직하다", "똑똑하다", "똑 부러지는 소리만 하네", "준비를 많이 했네", "실력이 좋다", "최고다",
    "화이팅", "힘내라", "늘 응원한다", "고생 많았다", "노력하는 게 보인다", "차분하다", "친절하다", "부지런하다",
    "감동이다", "훈훈하다", "멋있는 거 아님?", "어떻게 저렇게 잘하냐", "천재 아니냐", "존경스럽다", "배울 점이 많다",
    "기대된다", "하는 일마다 잘 된다", "정말 수고했다", "인간적이다", "든든하다", "꾸준하다",
]
BENIGN_IMPERATIVES = {"화이팅", "힘내라"}
KIND_MODIFIERS = ["멋진", "고마운", "성실한", "친절한", "대단한", "든든한", "열정적인", "부지런한", "착한", "용감한",
                  "똑똑한", "유쾌한", "따뜻한", "믿음직한"]
EXCLAMATIONS = ["와 대박", "대박 진짜", "우와", "헐 대박", "아 좋다", "오 괜찮네", "와 신난다", "아 행복해", "와 감동",
                "아싸", "오예", "와 진짜 좋다", "헐 신기해", "역시 최고"]

# Framing shared by benign and offensive comments, so that none of it hints at the label.
PREFIXES = ["", "", "", "", "", "솔직히 ", "아니 ", "와 ", "이번에도 ", "어휴 ", "하... ", "ㅋㅋㅋ ", "진심 ",
            "근데 ", "음 ", "오 ", "ㅎㅎ "]
SUFFIXES = ["", "", "", "", " ㅋㅋ", " ㅋㅋㅋㅋ", "..", "!!", " 진짜로", ".", "~", "?", " ㅎㅎ", "!", " 어휴"]
JOINERS = [". ", " ", " ", "... ", "ㅋㅋ ", ", "]
ADVERBS = ["", "", "진짜 ", "또 ", "하여튼 ", "맨날 ", "다 "]
AFTER_GROUP = ["", " ㅋㅋ", " 또 시작이네", " 또 나왔네", "..", " 어휴", " 많네 요즘"]

# Neutral building blocks. A benign comment is one or two neutral clauses; an offensive
# comment is built from the same clauses plus an insult, so only the insult tells them apart.
# Nouns by topic: they fill the noun slots of the clause patterns below.
TOPIC_NOUNS: dict[str, list[str]] = {
    "politics": ["이번 예산안", "새 정책", "선거 결과", "청문회", "후보 토론회", "공약", "지방선거", "여론조사",
                 "국정감사", "법안 처리", "투표율", "복지 예산", "세금 개편", "청년 정책", "본회의", "지역 공약",
                 "사전투표", "개표 방송", "정책 설명회", "주민 투표", "교통 공약", "출마 선언", "의정 활동 보고"],
    "race": ["외국인 고용 허가", "다문화 지원", "관광객 증가", "난민 심사", "농촌 일손", "이민 정책", "명동 상권",
             "한국어 교육", "비자 제도", "통역 서비스", "지역 축제", "외국인 주민 센터", "세계 음식 축제",
             "유학생 기숙사", "쌀국수 맛집", "인도 카레", "국제 학교", "이주민 상담소", "공항 입국 심사"],
    "gender": ["육아휴직", "여성가족부 개편", "임금 격차", "군 복무 보상", "출산 정책", "돌봄 지원", "강연 일정",
               "축제 일정", "직장 어린이집", "경력 단절 지원", "아빠 육아 예능", "유연 근무제", "산후 조리원",
               "보육 수당", "남녀 공용 화장실", "신혼부부 대출"],
    "religion": ["성탄 미사", "사찰 관람료", "템플스테이", "사원 건축", "부활절 행사", "종교 행사", "연등회",
                 "교회 바자회", "주민 간담회", "문화재 보존", "산사 음악회", "성가대 공연", "절밥", "크리스마스 트리",
                 "라마단 기간", "봉사 활동"],
    "celebrity": ["새 앨범", "타이틀곡", "뮤직비디오", "콘서트 티켓", "드라마 결말", "예능 회차", "팬미팅",
                  "무대 의상", "첫 방송", "시상식", "신곡 안무", "영화 개봉", "음원 차트", "월드 투어", "팬 사인회",
                  "자컨 영상", "라디오 출연", "드라마 촬영지", "화보 촬영", "연기 변신"],
    "sports": ["이번 경기", "역전골", "선발 투수", "결승전", "개막전", "응원가", "양궁 단체전", "골키퍼 선방",
               "이적 시장", "하이라이트 영상", "다음 시즌", "홈 경기", "마라톤 대회", "유니폼 디자인", "연장전",
               "승부차기", "신인 드래프트", "전지훈련", "올스타전", "경기장 먹거리", "배구 중계"],
    "weather": ["오늘 날씨", "주말 날씨", "내일 비 소식", "이번 한파", "봄꽃 개화", "장마", "미세먼지", "출근길 눈",
                "일교차", "태풍 경로", "아침 기온", "단풍 소식", "첫눈", "황사", "열대야", "벚꽃 축제", "가을 하늘",
                "일기 예보", "폭염 특보"],
    "tech": ["새 스마트폰", "카메라 성능", "배터리 용량", "전기차 충전소", "반도체 수출", "노트북 가격",
             "앱 업데이트", "무선 이어폰", "AI 번역기", "자율주행 기술", "태블릿", "충전 속도", "스마트워치",
             "게임기 신제품", "로봇 청소기", "화면 크기", "요금제", "사진 보정 기능", "와이파이 속도"],
    "economy": ["아파트값", "전세 시장", "최저임금", "금리 인상", "주식 시장", "청년 일자리", "월세",
                "장바구니 물가", "환율", "연말 정산", "창업 지원", "기름값", "적금 금리", "중고차 시세",
                "전통 시장", "편의점 도시락", "택배비", "재테크 정보"],
    "society": ["지하철 요금", "무임승차 제도", "출근길 지하철", "이동권 문제", "병원 진료", "방역 수칙",
                "직장 문화", "세대 차이", "동네 도서관", "버스 노선", "주차 문제", "분리수거", "저상 버스",
                "엘리베이터 설치", "경로당", "백신 접종", "재택근무", "층간 소음", "자전거 도로"],
    "daily": ["시골 풍경", "할머니 밥상", "오늘 브이로그", "영상 편집", "점심 메뉴", "김치찌개", "동네 빵집",
              "주말 나들이", "강아지 산책", "캠핑 장비", "커피 맛집", "집밥 레시피", "떡볶이", "퇴근길 노을",
              "고양이 영상", "텃밭 가꾸기", "빨래 꿀팁", "자취 요리", "등산 코스", "배경 음악", "손편지",
              "수박 화채"],
}
# Everyday nouns for any topic: a long tail of words that each occur only once or twice, in benign
# and offensive comments alike, so that an unfamiliar word does not look like an insult.
EVERYDAY_NOUNS = [
    "비빔밥", "냉면", "삼겹살", "치킨", "짜장면", "김밥", "순두부찌개", "칼국수", "만두", "호떡", "붕어빵", "팥빙수",
    "라면", "돈가스", "초밥", "샌드위치", "샐러드", "파스타", "피자", "햄버거", "감자탕", "닭갈비", "불고기", "잡채",
    "전복죽", "식혜", "수정과", "아이스크림", "케이크", "마카롱", "도넛", "식빵", "우동", "오므라이스", "보쌈", "족발",
    "해장국", "된장찌개", "미역국", "계란말이", "고구마", "옥수수", "귤", "딸기", "복숭아", "포도", "참외", "녹차",
    "라떼", "밀크티", "떡국", "한강 공원", "제주도", "부산 바다", "강릉", "경주", "전주 한옥마을", "설악산", "지리산",
    "남산 타워", "동물원", "수족관", "놀이공원", "박물관", "미술관", "시장 골목", "버스 터미널", "기차역", "공항",
    "해수욕장", "계곡", "캠핑장", "수영장", "헬스장", "공원 산책로", "편의점", "대형 마트", "문구점", "꽃집", "세탁소",
    "약국", "동네 병원", "우체국", "놀이터", "영화관", "노래방", "볼링장", "찜질방", "온천", "휴게소", "가을 운동회",
    "졸업식", "입학식", "결혼식", "돌잔치", "생일 파티", "집들이", "이사", "대청소", "김장", "벼룩시장", "불꽃놀이",
    "연말 공연", "뮤지컬", "연극", "전시회", "북 콘서트", "독서 모임", "동창회", "자격증 시험", "수능", "기말고사",
    "방학 숙제", "여름 방학", "겨울 휴가", "건강 검진", "치과 예약", "이삿짐", "택배 상자", "우산", "운동화",
    "겨울 패딩", "선글라스", "자전거", "킥보드", "화분", "다이어리", "달력", "손목시계", "보조 배터리", "키보드",
    "모니터", "냉장고", "세탁기", "에어컨", "선풍기", "전기장판", "가습기", "공기청정기", "밥솥", "커피 머신",
    "블루투스 스피커", "필름 카메라", "만화책", "소설책", "웹툰", "라디오 사연", "보드게임", "퍼즐", "뜨개질",
    "그림 그리기", "요가", "필라테스", "수영 강습", "피아노 학원", "기타 연습", "사진 전시", "동네 축제", "플리마켓",
    "벚꽃길", "단풍길", "일출", "노을", "별자리", "무지개", "눈사람", "고양이", "강아지 간식", "햄스터", "금붕어",
    "앵무새", "반려 식물", "텃밭 상추", "방울토마토", "화단", "손수건", "머그컵", "캘린더 앱", "지도 앱", "드라이브 코스",
]
GENERAL_NOUNS = ["이 기사", "오늘 뉴스", "이번 소식", "이 영상", "요약 정리", "댓글 분위기"]
# Predicates that follow a noun + 은/는/이/가 (or no particle) ...
NOUN_PREDICATES = [
    "좋네요", "괜찮네요", "기대되네요", "궁금하네요", "걱정되네요", "신기하네요", "반갑네요", "좀 아쉽네요",
    "대단하네요", "중요하죠", "마음에 드네요", "생각보다 괜찮네요", "잘 됐으면 좋겠어요", "나쁘지 않네요",
    "확실히 달라졌네요", "예전보다 나아졌네요", "흥미롭네요", "관심이 가네요", "기대 이상이네요", "딱 적당하네요",
    "많이 바뀌었네요", "늘 화제네요",
]
# ... and those that only follow a noun + 은/는.
TOPIC_PREDICATES = ["더 지켜봐야겠네요", "꼼꼼히 봐야겠어요", "정말 중요한 문제죠", "다음 주에 다시 확인해 봐야겠어요",
                    "가족들이랑 같이 봤어요", "저도 궁금했어요"]
# Patterns around a noun ({n}; {은}, {이}, {을} pick the particle that fits it; {p}, {q} a predicate above).
NOUN_FRAMES = [
    "{n}{이} {p}", "{n}{은} {p}", "{n} {p}", "{n}{이} {p}", "{n}{은} {q}", "{n}{은} {q}",
    "{n} 소식 반갑네요", "{n} 얘기 잘 봤습니다", "{n} 관련 정보 감사합니다", "{n} 좀 더 자세히 알려주세요",
    "{n} 어떻게 될지 궁금하네요", "{n} 기사 잘 읽었습니다", "{n} 보니까 기분 좋아지네요", "{n} 때문에 요즘 바쁘네요",
    "{n} 정리 감사합니다", "{n} 얘기는 늘 흥미롭네요", "{n} 덕분에 주말이 즐거웠어요", "{n} 기다리는 중입니다",
    "{n} 정보 찾고 있었는데 딱이네요", "{n} 후기 궁금해요", "{n} 관련해서 질문 있어요", "{n} 어떻게 생각하세요?",
    "{n}에 대해 더 알고 싶네요", "{n}{을} 응원합니다", "{n}{을} 다시 보니 새롭네요", "{n} 보러 가고 싶다",
    "{n}{이} 제일 궁금했어요",
]
# Whole neutral sentences.
NEUTRAL_ANY = [
    "좋은 기사 감사합니다", "내용 잘 봤습니다", "이건 좀 더 지켜봐야 할 듯", "다들 건강 조심하세요",
    "응원합니다", "와 대박이네요", "우리 동네도 그랬으면 좋겠다", "정확한 사실 확인이 먼저인 것 같아요",
    "양쪽 얘기 다 들어봐야죠", "이런 뉴스 보면 마음이 복잡하네요", "오늘도 수고 많으셨습니다", "댓글 보러 왔습니다",
    "첫 댓글", "요약 잘 해주셔서 이해가 쉽네요", "결과가 어떻게 될지 궁금하다", "기자님 취재 고생하셨어요",
    "좀 더 자세한 설명이 있었으면", "그래도 조금씩 나아지고 있는 듯", "이런 소식 반갑네요", "생각해 볼 만한 문제네요",
    "주말에 가족들이랑 얘기해 봐야겠다", "벌써 이런 시기가 왔구나", "다음 소식도 기다릴게요",
    "이게 사실이라면 놀랍네요", "제목만 보고 판단하면 안 될 듯", "다들 좋은 하루 보내세요", "와 시간 진짜 빠르다",
    "공감 누르고 갑니다", "이 문제는 의견이 갈릴 수밖에 없겠네", "혹시 이거 어디서 볼 수 있나요",
    "출처가 어디인가요", "이거 저만 몰랐나요", "오늘 퇴근하고 봐야겠다", "알림 설정해 놨어요", "구독하고 갑니다",
    "정리가 깔끔하네요", "저도 같은 생각이에요", "이런 정보는 널리 알려졌으면", "부모님께도 보여드려야겠어요",
    "다음 편 언제 올라오나요", "설명 들으니까 이해가 되네요", "반대 의견도 궁금하네요", "시간 가는 줄 몰랐네요",
    "오랜만에 웃고 갑니다", "차분하게 잘 정리해 주셨네요", "숫자로 보니까 확 와닿네요", "질문 하나 드려도 될까요",
    "다들 주말 잘 보내세요", "점심 먹으면서 보는 중", "친구한테 공유했어요",
]
# Harmless uses of the words inside the insults ("쓰레기", "지능", "밥맛", "한국", "가라" ...), so that
# the model has to learn whole insult expressions, not single words of them.
NEUTRAL_ECHOES = [
    "인공지능 기술 발전 속도가 대단하네요", "수준 높은 경기였어요", "머리 스타일 바꾸니까 잘 어울리네요",
    "정신 건강도 꼭 챙기세요", "얼굴 보니까 반갑네요", "밥맛 좋은 계절이네요", "바닥 난방 켜야겠어요",
    "쓰레기 분리배출 날짜 확인하세요", "한국어 공부하는 유학생들 멋있어요", "고향에 돌아가는 길 조심하세요",
    "주말에 밖에 나가서 산책했어요", "오늘 토론 주제가 흥미롭네요", "개념 정리가 잘 돼 있네요",
    "입맛 없을 때 딱이네요", "걱정이 싹 사라졌어요", "나라 경제가 좋아졌으면", "모르고 지나칠 뻔했네요",
    "싫다는 사람도 있겠지만 저는 좋네요", "양심적인 가게라서 자주 가요", "내일 기온이 뚝 떨어진다네요",
    "비 올 것 같네요", "감기가 의심되면 병원 가세요", "구제 옷 가게 구경했어요", "가방에 뭐가 들었는지 궁금하네요",
    "토요일에 나온다네요", "한국 영화 요즘 재밌네요", "자기 전에 보기 좋은 영상", "다 같이 응원해요",
    "진짜 오랜만에 들어보는 노래", "정신없이 바빴던 한 주였어요", "우리나라 선수들 최고예요", "집에 가라는 말이 반갑네요",
]
NEUTRAL_BY_TOPIC: dict[str, list[str]] = {
    "politics": ["예산은 제때 처리했으면 좋겠네요", "투표 꼭 합시다", "정책 내용을 좀 더 알려주세요",
                 "여야가 좀 협치했으면", "공약 이행 여부를 꼭 따져봐야죠", "사전투표 하고 왔어요"],
    "race": ["외국인 노동자분들 덕분에 돌아가는 농가도 많죠", "다문화 아이들 잘 적응했으면 좋겠어요",
             "관광객 늘어나면 상인분들 숨통 트이겠네요", "심사는 원칙대로 하면 되는 거고", "서로 문화를 존중하면 되죠"],
    "gender": ["육아휴직 쓰는 아빠들 많아져서 보기 좋네요", "남녀 모두 공정하게 대우받는 사회가 됐으면",
               "찬반 의견 다 들어보고 결정했으면", "군 복무 보상은 다른 방식도 고민해 봤으면"],
    "religion": ["종교의 자유는 존중해야죠", "온라인 미사 덕분에 집에서 편하게 봤어요",
                 "주민들과 대화로 풀었으면 좋겠네요", "관람료 없어지니 등산객들 좋아하겠다"],
    "celebrity": ["사실관계 확인될 때까지 기다려 봅시다", "이번 앨범 노래 진짜 좋아요",
                  "타이틀곡 하루 종일 듣는 중", "예능은 그냥 재밌게 보면 되지"],
    "sports": ["역전골 소름 돋았다", "선수들 고생 많았어요", "직관 가고 싶다", "양궁은 역시 믿고 본다",
               "체력 진짜 대단하다", "부상 없이 시즌 마무리했으면"],
    "weather": ["우산 꼭 챙기세요", "출근길 미끄럼 조심하세요", "벌써 꽃 피는구나", "비 피해 없길 바랍니다",
                "옷 따뜻하게 입으세요"],
    "tech": ["가격 동결이면 살 만하네", "충전소 좀 더 늘려주세요", "국산 반도체 화이팅", "디자인 깔끔하네요"],
    "economy": ["집값 안정됐으면 좋겠다", "노사가 잘 합의했으면", "서민들 살기 힘드네요", "월급 빼고 다 오르네요"],
    "society": ["장애인분들 이동권도 중요한 문제죠", "어르신들 의견도 들어봐야죠", "확진자분들 빨리 회복하세요",
                "세대 차이는 서로 이해하면 되죠"],
    "daily": ["할머니 너무 정정하시다", "영상 편집 깔끔하네요", "다음 편도 기대할게요", "시골 풍경 힐링된다",
              "배고파지는 영상이네요"],
}
# Groups mentioned neutrally in benign comments: the same (non-slur) mentions the offensive comments
# target, and respectful ones, so that a mention alone does not make a comment offensive.
NEUTRAL_GROUPS: dict[str, list[str]] = {
    "race": ["외국인 노동자", "다문화 가정", "조선족 동포분들", "중국인 관광객", "중국인들", "흑인들", "인도인들",
             "베트남 사람들", "난민들", "외국인 유학생"],
    "gender": ["여자들", "남자들", "여성 직장인들", "아빠들", "성소수자분들", "동성애자들", "워킹맘들"],
    "religion": ["목사님", "목사들", "무슬림들", "신부님", "스님들", "신자분들", "성당 신자들"],
    "society": ["어르신들", "장애인분들", "장애인들", "환자들", "확진자분들", "공무원분들", "공무원들", "청년들", "MZ세대"],
    "politics": ["진보 정당", "보수 정당", "지지자분들", "진보 쪽", "보수 쪽"],
    "celebrity": ["연예인들", "팬분들"],
    "sports": ["축구 팬들", "흑인 선수들", "선수들"],
    "economy": ["노조원들", "집주인들", "세입자들", "자영업자분들"],
}
GROUP_FRAMES = [
    "{g} 지원 늘어나면 좋겠네요", "{g} 얘기도 들어봐야죠", "{g} 관련 기사 잘 봤습니다", "{g}도 다 같은 이웃이죠",
    "{g} 입장도 이해가 되네요", "{g}{을} 위한 정책이 더 필요해요", "{g} 인터뷰 내용 공감돼요",
    "{g}{이} 살기 좋은 나라가 됐으면", "{g} 의견도 존중해야죠", "{g} 많이 힘드셨겠어요", "{g} 덕분에 돌아가는 일도 많죠",
    "{g}{은} 요즘 어떻게 생각할까요", "{g} 응원합니다", "{g} 얘기 나와서 반갑네요", "{g}{이} 많이 늘었네요",
]
# Individuals and organisations mentioned neutrally (the offensive target lists minus the one
# derogatory mention).
PERSON_FRAMES = [
    "{x} 발언 기사 잘 봤습니다", "{x} 말에 공감합니다", "{x} 설명이 깔끔하네요", "{x} 응원합니다",
    "{x} 인터뷰 잘 봤어요", "{x} 말도 일리가 있네요", "{x} 다음 행보가 궁금하네요", "{x}{이} 한 말 기억에 남네요",
    "{x} 덕분에 많이 배웠어요", "{x} 입장 발표 기다려 봅시다", "{x}{은} 이번에 잘했네요", "{x} 고생 많으셨어요",
    "{x} 답변 명확해서 좋았어요", "{x} 의견 궁금하네요",
]
# Where and when: open neutral clauses ("퇴근길에 장마 소식 반갑네요") and the context of offensive ones.
SCENES = ["어제", "오늘 아침", "퇴근길에", "지난주에", "우리 동네에서", "회사에서", "집에서", "친구랑", "주말에",
          "점심시간에", "버스 기다리면서", "출근하면서", "운동하고 와서", "밥 먹으면서", "카페에서", "새벽에",
          "휴가 때", "부모님이랑", "아이랑", "동생이랑", "라디오로", "유튜브로", "아까", "방금", "저녁에",
          "퇴근하고", "학교 마치고", "명절에", "지하철에서", "오랜만에"]
# Connective clauses ("결승전 보러 갔는데 ..."): open benign clauses, and lead to the insult in offensive ones.
CONNECTIVES = ["{n} 보다가", "{n} 보러 갔는데", "{n} 볼 때마다", "{n} 찾아보면", "{n} 듣고 나니까", "{n} 끝나고 나서",
               "{n} 기다리다가", "{n} 검색해 봤는데", "{n} 정리하다가", "{n} 읽어 보면", "{n} 얘기 듣다가",
               "{n} 준비하면서", "{n} 확인해 보니까", "{n} 챙겨 보는데", "{n} 생각하면"]
TIMES = ["어제", "오늘 아침", "지난주에", "주말에", "새벽에", "아까", "방금", "저녁에", "명절에", "오랜만에", "올해도"]
# Lead-ins that put a topic noun before the insulted mention in offensive comments.
CONTEXT_LEADS = ["{n} 기사 보니까", "{n} 얘기 나오니까", "{n} 소식 듣고 든 생각인데", "{n} 영상 보다가 느낀 건데",
                 "{n} 관련 뉴스 보면", "{s} {n} 기사 봤는데", "{s} {n} 얘기 듣고 나서", "{s} {n} 검색해 보니"]
# What the target did, between the mention and the insult ("저 의원 청문회 얘기하는 거 보니까 한심하다").
DOING_LEADS = ["{n} 얘기하는 거 보니까", "{n} 관련 발언 보니까", "{n} 설명하는 거 보니까", "{n} 두고 한 말 보니까",
               "{t} {n} 얘기하던데", "{t} {n} 홍보하는 거 봤는데", "{n} 소개하면서 웃는 거 보니", "{n} 질문에 답하는 거 보면"]

# Demo comments for `make demo`'s predict step: (comment, its insult or None), never a sample comment.
# Offensive lines use insults of the lexicons above (the only ones the demo model can know) in
# sentence frames the generator never makes; benign lines recombine the sample's neutral words.
DEMO_COMMENTS: list[tuple[str, Optional[str]]] = [
    ("주말 날씨 좋으면 강아지 산책 가야겠어요", None),
    ("점심 먹다가 뉴스 봤는데 그 의원은 구제불능이다", "구제불능이다"),
    ("외국인 유학생 지원도 늘어나면 좋겠네요", None),
    ("저 MC 진행할 때마다 밥맛 떨어진다", "밥맛 떨어진다"),
    ("그 의원 청년 정책 발언 기사 잘 봤습니다", None),
    ("시상식 끝나고 저 배우 수상 소감 들어보니 뻔뻔하기 짝이 없다", "뻔뻔하기 짝이 없다"),
    ("새 스마트폰 카메라 성능이 기대 이상이네요", None),
    ("골키퍼 선방은 좋았는데 저 심판은 제정신이냐", "제정신이냐"),
    ("선수들 고생 많았어요 다음 시즌도 응원합니다", None),
    ("아 씨발 주말 날씨 또 비 오네", "아 씨발"),
    ("장애인분들 이동권 문제 기사 잘 읽었습니다", None),
    ("한심한 정부가 장바구니 물가 잡는다고 난리네", "한심한"),
    ("비 소식 있으니 우산 꼭 챙기세요", None),
    ("윗댓 같은 사람들 보면 지능이 의심된다", "지능이 의심된다"),
    ("타이틀곡 첫 방송 무대 후기 궁금해요", None),
    ("콘서트 티켓 다 팔렸다는데 그 유튜버는 주제도 모르고 나대네", "주제도 모르고 나대네"),
    ("어르신들 의견도 듣고 지하철 요금 결정했으면", None),
    ("이 기자 기사 쓰는 수준 진짜 바닥이다", "수준 진짜 바닥이다"),
    ("저 배우 다음 드라마도 기대되네요", None),
    ("명동 상권 살아나도 조선족들은 자기 나라로 돌아가라", "자기 나라로 돌아가라"),
    ("사원 건축 얘기는 주민 간담회에서 더 들어봐야죠", None),
    ("꼴페미들 강연 한다는데 역겹다", "역겹다"),
    ("기상청 일기 예보 덕분에 출근길 눈 조심했어요", None),
    ("ㅆㅂ 뭐야 이게 앱 업데이트하고 더 느려졌네", "ㅆㅂ 뭐야 이게"),
    ("전세 시장 안정됐으면 좋겠다", None),
    ("틀딱들 지하철 요금 얘기할 때마다 꼴값 떤다", "꼴값 떤다"),
    ("육아휴직 쓰는 아빠들 응원합니다", None),
    ("개념 없는 이 방송국 예능 회차 또 재방송이네", "개념 없는"),
    ("동네 빵집 커피 맛집 정보 감사합니다", None),
    ("그 감독 인터뷰 들어보면 머리에 뭐가 들었냐", "머리에 뭐가 들었냐"),
    ("이 기자 설명이 깔끔해서 이해가 쉽네요", None),
    ("존나 짜증나네 출근길 지하철 오늘도 만원이야", "존나 짜증나네"),
    ("다문화 가정 아이들 한국어 교육 지원 반갑네요", None),
    ("개독 목사들 헌금 얘기만 하는 거 진짜 쓰레기 같네", "쓰레기 같네"),
]

# --------------------------------------------------------------------------------------
# Gold fields from raw annotations (the at-least-2-of-3 rule).


def check_raw(comment: str, raw: list[dict[str, Any]], where: str) -> None:
    """Fail loudly when parallel index lists differ in length or point outside the comment."""
    for i, a in enumerate(raw):
        for kind in ("off", "tgt"):
            starts, ends = a[f"{kind}_start_idx"], a[f"{kind}_end_idx"]
            assert len(starts) == len(ends), f"{where}: annotator {i} {kind} start/end lengths differ"
            for s, e in zip(starts, ends):
                assert 0 <= s <= e < len(comment), f"{where}: annotator {i} {kind} span [{s}..{e}] outside comment"


def majority_offsets(comment: str, raw: list[dict[str, Any]], kind: str) -> list[Span]:
    """End-exclusive spans of the characters marked by at least 2 annotators (inclusive raw ends)."""
    votes = [0] * len(comment)
    for a in raw:
        marked = set()
        for s, e in zip(a[f"{kind}_start_idx"], a[f"{kind}_end_idx"]):
            marked.update(range(s, e + 1))
        for i in marked:
            votes[i] += 1
    spans: list[Span] = []
    start: Optional[int] = None
    for i, v in enumerate(votes + [0]):
        if v >= 2 and start is None:
            start = i
        elif v < 2 and start is not None:
            spans.append((start, i))
            start = None
    return spans


def span_text(comment: str, spans: list[Span]) -> str:
    """The gold span field: the covered substrings joined by SPAN_SEPARATOR ("" when none)."""
    return SPAN_SEPARATOR.join(comment[s:e] for s, e in spans)


def gold_from_raw(comment: str, raw: list[dict[str, Any]]) -> dict[str, Any]:
    """OFF, TGT, GRP, OFF_span, TGT_span from three raw annotations."""
    off = sum(bool(a["offensiveness"]) for a in raw) >= 2
    if not off:
        return {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""}
    type_votes = {t: 0 for t in TARGET_TYPES}
    group_votes = {g: 0 for g in GROUPS}
    for a in raw:
        for t in {t for inner in a["target"] for t in inner if t != NOT_SPECIFIED}:
            type_votes[t] += 1
        for g in {RAW_TO_GRP[r] for inner in a["target_group"] for r in inner if r != UNKNOWN_GROUP}:
            group_votes[g] += 1
    best = max(type_votes.values())
    assert best >= 2, f"no majority target type for {comment!r}"
    tgt = next(t for t in TARGET_TYPES if type_votes[t] == best)
    grp = ", ".join(g for g in GROUPS if group_votes[g] >= 2) if tgt == "group" else ""
    return {
        "OFF": True,
        "TGT": tgt,
        "GRP": grp or None,
        "OFF_span": span_text(comment, majority_offsets(comment, raw, "off")),
        "TGT_span": span_text(comment, majority_offsets(comment, raw, "tgt")),
    }


def annotation(aid: int, offensive: bool, off: Sequence[Span] = (), target: Sequence[str] = (),
               groups: Sequence[str] = (), tgt: Sequence[Span] = ()) -> dict[str, Any]:
    """One raw annotator dict; spans are given end-exclusive and written with inclusive ends."""
    return {
        "offensiveness": offensive,
        "annotator_id": aid,
        "off_start_idx": [s for s, _ in off],
        "off_end_idx": [e - 1 for _, e in off],
        "target": [list(target)] if target else [],
        "target_group": [list(groups)] if groups else [],
        "tgt_start_idx": [s for s, _ in tgt],
        "tgt_end_idx": [e - 1 for _, e in tgt],
    }


def make_record(guid: str, source: str, date: str, title: str, comment: str,
                raw: list[dict[str, Any]]) -> dict[str, Any]:
    """A KOLD record with gold fields derived from `raw`."""
    assert SPAN_SEPARATOR not in comment, f"{guid}: comment contains the span separator"
    check_raw(comment, raw, guid)
    return {"guid": guid, "source": source, "date": date, "title": title, "comment": comment,
            **gold_from_raw(comment, raw), "raw_labels": raw}


# --------------------------------------------------------------------------------------
# Sample generation.


def has_final_consonant(word: str) -> bool:
    """Whether the last Hangul syllable ends in a consonant (decides 은/는, 이/가)."""
    c = word[-1]
    return "가" <= c <= "힣" and (ord(c) - 0xAC00) % 28 != 0


def particle(rng: random.Random, word: str) -> str:
    """A topic/subject particle (or none) fitting `word`."""
    kind = rng.choice(["topic", "topic", "subject", "none"])
    if kind == "none":
        return ""
    if kind == "topic":
        return "은" if has_final_consonant(word) else "는"
    return "이" if has_final_consonant(word) else "가"


def assemble(pieces: list[tuple[str, Optional[str]]]) -> tuple[str, list[Span], list[Span]]:
    """Join (text, tag) pieces; tag 'off'/'tgt' pieces become spans of that kind."""
    text, off, tgt = "", [], []
    for piece, tag in pieces:
        if tag == "off":
            off.append((len(text), len(text) + len(piece)))
        elif tag == "tgt":
            tgt.append((len(text), len(text) + len(piece)))
        text += piece
    return text, off, tgt


def fill(template: str, word: str) -> str:
    """Put `word` into the {n}/{g}/{x} slot of `template`, with particles that fit it."""
    final = has_final_consonant(word)
    text = template.replace("{n}", word).replace("{g}", word).replace("{x}", word)
    return (text.replace("{은}", "은" if final else "는").replace("{이}", "이" if final else "가")
            .replace("{을}", "을" if final else "를"))


_DECKS: dict[str, list[Any]] = {}  # see `deal`; emptied by `generate_sample`


def deal(rng: random.Random, key: str, pool: Sequence[Any]) -> Any:
    """The next item of a shuffled deck of `pool` (reshuffled when used up), so that every
    building block of the sample gets used, not only the lucky ones."""
    deck = _DECKS.get(key)
    if not deck:
        deck = _DECKS[key] = rng.sample(list(pool), len(pool))
    return deck.pop()


def topic_noun(rng: random.Random, topic: str) -> str:
    """A noun of `topic`, or an everyday or general one."""
    roll = rng.random()
    if roll < 0.1:
        return deal(rng, "noun", GENERAL_NOUNS)
    if roll < 0.4 or topic not in TOPIC_NOUNS:
        return deal(rng, "everyday", EVERYDAY_NOUNS)
    return deal(rng, f"noun:{topic}", TOPIC_NOUNS[topic])


def neutral_clause(rng: random.Random, topic: str) -> str:
    """One neutral clause: a noun pattern, or a whole neutral sentence."""
    if rng.random() < 0.6:
        clause = fill(rng.choice(NOUN_FRAMES), topic_noun(rng, topic))
        clause = clause.replace("{p}", deal(rng, "pred", NOUN_PREDICATES)).replace("{q}", rng.choice(TOPIC_PREDICATES))
        roll = rng.random()
        if roll < 0.25:
            return deal(rng, "scene", SCENES) + " " + clause
        if roll < 0.45:  # "개막전 보러 갔는데 좋네요"
            return connective(rng, topic) + " " + deal(rng, "pred", NOUN_PREDICATES)
        return clause
    roll = rng.random()
    if roll < 0.2:
        return deal(rng, "echo", NEUTRAL_ECHOES)
    if topic in NEUTRAL_BY_TOPIC and roll < 0.6:
        return deal(rng, f"sentence:{topic}", NEUTRAL_BY_TOPIC[topic])
    return deal(rng, "sentence", NEUTRAL_ANY)


def connective(rng: random.Random, topic: str) -> str:
    """A connective clause about a topic noun ("개막전 보러 갔는데")."""
    return deal(rng, "connective", CONNECTIVES).replace("{n}", topic_noun(rng, topic))


def neutral_mention(rng: random.Random, topic: str) -> str:
    """A group, person or organisation to say something nice about."""
    roll = rng.random()
    if roll < 0.35:
        pool = NEUTRAL_GROUPS.get(topic) or [g for gs in NEUTRAL_GROUPS.values() for g in gs]
        return deal(rng, f"group:{topic}", pool)
    if roll < 0.8:
        people = [p for p in INDIVIDUAL_TARGETS.get(topic, []) * 2 + INDIVIDUAL_TARGETS["any"] if p not in DEROGATORY]
        return deal(rng, f"person:{topic}", people)
    return deal(rng, "organisation", OTHERS_TARGETS)


def mention_clause(rng: random.Random, topic: str) -> str:
    """A neutral clause about a group, a person or an organisation."""
    roll = rng.random()
    if roll < 0.55:
        pool = NEUTRAL_GROUPS.get(topic) or [g for gs in NEUTRAL_GROUPS.values() for g in gs]
        return fill(rng.choice(GROUP_FRAMES), deal(rng, f"group:{topic}", pool))
    if roll < 0.85:
        people = [p for p in INDIVIDUAL_TARGETS.get(topic, []) * 2 + INDIVIDUAL_TARGETS["any"] if p not in DEROGATORY]
        return fill(rng.choice(PERSON_FRAMES), deal(rng, f"person:{topic}", people))
    return fill(rng.choice(PERSON_FRAMES), deal(rng, "organisation", OTHERS_TARGETS))


def join_clause(rng: random.Random, clause: str) -> str:
    """`clause` followed by a separator for the next one."""
    return clause + (" " if clause[-1] in "!?." else rng.choice(JOINERS))


def target_then_insult(rng: random.Random, mention: str, insult: str) -> list[tuple[str, Optional[str]]]:
    """`mention` + particle + adverb + `insult`, choosing words that fit the insult's mood."""
    if insult in IMPERATIVES or insult in BENIGN_IMPERATIVES:
        glue = rng.choice(["", "은" if has_final_consonant(mention) else "는"]) + " " + rng.choice(["", "그냥 ", "제발 "])
    else:
        adverb = rng.choice(ADVERBS)
        glue = particle(rng, mention) + " " + ("" if insult.startswith(adverb.strip() or "\0") else adverb)
    return [(mention, "tgt"), (glue, None), (insult, "off")]


def targeted_pieces(rng: random.Random, mention: str, topic: str, allow_modifier: bool,
                    benign: bool = False) -> list[tuple[str, Optional[str]]]:
    """A comment insulting `mention`, in one of several word orders, around neutral clauses; with
    `benign`, its twin that praises `mention` instead (the 'off' pieces are then not offensive)."""
    if benign:
        preds, key, modifiers = PRAISE_PREDICATES, "praise", KIND_MODIFIERS
    else:
        preds = INSULT_PREDICATES + (RACE_PREDICATES * 3 if topic == "race" else [])
        key, modifiers = ("insult:race" if topic == "race" else "insult"), INSULT_MODIFIERS

    def insult() -> str:
        return deal(rng, key, preds)

    pre, post = rng.choice(PREFIXES), rng.choice(SUFFIXES)
    shapes = (["target_first"] * 3 + ["after_neutral"] * 3 + ["context", "doing", "doing", "neutral_after", "inverted",
              "two_insults"] + (["modifier"] * 3 if allow_modifier else []))
    shape = rng.choice(shapes)
    if shape == "target_first":
        return [(pre, None), *target_then_insult(rng, mention, insult()), (post, None)]
    if shape == "after_neutral":
        return [(join_clause(rng, neutral_clause(rng, topic)), None),
                *target_then_insult(rng, mention, insult()), (post, None)]
    if shape == "context":
        if rng.random() < 0.5:
            lead = connective(rng, topic)
        else:
            lead = rng.choice(CONTEXT_LEADS).replace("{n}", topic_noun(rng, topic))
            lead = lead.replace("{s}", deal(rng, "scene", SCENES))
        return [(pre + lead + " ", None), *target_then_insult(rng, mention, insult()), (post, None)]
    if shape == "doing":
        word = insult()
        adverb = "" if word in IMPERATIVES or word in BENIGN_IMPERATIVES else rng.choice(ADVERBS)
        adverb = "" if word.startswith(adverb.strip() or "\0") else adverb
        if rng.random() < 0.5:
            lead = connective(rng, topic)
        else:
            lead = rng.choice(DOING_LEADS).replace("{n}", topic_noun(rng, topic)).replace("{t}", rng.choice(TIMES))
        return [(pre, None), (mention, "tgt"), (" " + lead + " " + adverb, None), (word, "off"), (post, None)]
    if shape == "neutral_after":
        clause = neutral_clause(rng, topic)
        return [(pre, None), *target_then_insult(rng, mention, insult()),
                (rng.choice([". ", " ", "... ", "ㅋㅋ "]) + clause, None)]
    if shape == "inverted":
        return [(pre, None), (insult(), "off"), (", ", None), (mention, "tgt"),
                (particle(rng, mention) + rng.choice(["", "", " ㅋㅋ", ".."]), None)]
    if shape == "two_insults":
        first, second = insult(), insult()
        while second == first:
            second = insult()
        return [(pre, None), *target_then_insult(rng, mention, first),
                (rng.choice([". ", " ", "... ", "ㅋㅋ "]) + rng.choice(["진짜 ", "그냥 ", "", "아무튼 "]), None),
                (second, "off"), (post, None)]
    lead = join_clause(rng, neutral_clause(rng, topic)) if rng.random() < 0.3 else pre
    return [(lead, None), (deal(rng, "modifier" + key, modifiers), "off"), (" ", None), (mention, "tgt"),
            (rng.choice(AFTER_GROUP), None)]


def untargeted_pieces(rng: random.Random, topic: str, benign: bool = False) -> list[tuple[str, Optional[str]]]:
    """Profanity with no target, around a neutral clause; with `benign`, an exclamation instead."""
    neutral = neutral_clause(rng, topic)
    lexicon, key = (EXCLAMATIONS, "exclamation") if benign else (PROFANITY, "profanity")
    shape = rng.choice(["before", "before", "after", "after", "alone", "two"])
    if shape == "before":
        return [(rng.choice(PREFIXES), None), (deal(rng, key, lexicon), "off"),
                (rng.choice([" ", ". ", "... ", ", "]) + neutral + rng.choice(SUFFIXES), None)]
    if shape == "after":
        return [(rng.choice(PREFIXES) + join_clause(rng, neutral), None), (deal(rng, key, lexicon), "off"),
                (rng.choice(SUFFIXES), None)]
    if shape == "alone":
        return [(rng.choice(PREFIXES), None), (deal(rng, key, lexicon), "off"), (rng.choice(SUFFIXES), None)]
    first, second = deal(rng, key, lexicon), deal(rng, key, lexicon)
    while second == first:
        second = deal(rng, key, lexicon)
    return [(first, "off"), (" " + rng.choice(["이게 뭐냐", "또 이러네", "아침부터"]) + " ", None), (second, "off"),
            (rng.choice(SUFFIXES), None)]


def neutral_comment(rng: random.Random, topic: str) -> str:
    """A benign comment: one or two neutral clauses, often mentioning a group or person neutrally,
    or the benign twin of an offensive comment."""
    roll = rng.random()
    if roll < 0.3:
        return assemble(targeted_pieces(rng, neutral_mention(rng, topic), topic, allow_modifier=True, benign=True))[0]
    if roll < 0.38:
        return assemble(untargeted_pieces(rng, topic, benign=True))[0]
    first = mention_clause(rng, topic) if rng.random() < 0.35 else neutral_clause(rng, topic)
    roll = rng.random()
    if roll < 0.25:
        text = join_clause(rng, first) + neutral_clause(rng, topic)
    elif roll < 0.35:
        text = join_clause(rng, neutral_clause(rng, topic)) + first
    else:
        text = first
    return (rng.choice(PREFIXES) + text + rng.choice(SUFFIXES)).strip()


def perturb(rng: random.Random, comment: str, span: Span) -> Optional[Span]:
    """A third annotator's version of a span: wider, narrower, shifted, whole comment or missing."""
    s, e = span
    how = rng.choice(["wider_left", "wider_right", "narrower", "shifted", "whole", "missing"])
    if how == "wider_left" and s > 0:
        return (comment.rfind(" ", 0, max(s - 1, 0)) + 1, e)
    if how == "wider_right" and e < len(comment):
        nxt = comment.find(" ", e + 1)
        return (s, len(comment) if nxt == -1 else nxt)
    if how == "narrower" and e - s >= 4:
        cut = rng.choice([1, 2])
        return (s, e - cut) if rng.random() < 0.5 else (s + cut, e)
    if how == "shifted" and e < len(comment):
        return (s + 1, e + 1)
    if how == "whole":
        return (0, len(comment))
    if how == "missing":
        return None
    return span


def third_spans(rng: random.Random, comment: str, spans: list[Span]) -> list[Span]:
    """Perturb each span; sometimes merge two spans into one covering the gap."""
    if len(spans) == 2 and rng.random() < 0.3:
        return [(spans[0][0], spans[1][1])]
    out = [p for p in (perturb(rng, comment, sp) for sp in spans) if p is not None]
    return sorted(set(out))


def target_labels(kind: str, grps: list[str]) -> tuple[list[str], list[str]]:
    """The raw `target` inner list and `target_group` inner list for an agreeing annotator."""
    return [kind], [GROUPS[g] for g in grps]


def simulate_offensive(rng: random.Random, ids: list[int], comment: str, off: list[Span], tgt: list[Span],
                       kind: str, grps: list[str]) -> list[dict[str, Any]]:
    """Two annotators mark exactly the generated spans; the third agrees, varies or dissents."""
    target, groups = target_labels(kind, grps)
    agree = [annotation(i, True, off, target, groups, tgt) for i in ids[:2]]
    roll = rng.random()
    if roll < 0.40:
        third = annotation(ids[2], True, off, target, groups, tgt)
    elif roll < 0.85:
        t3, g3 = list(target), list(groups)
        if rng.random() < 0.25:
            t3 = [NOT_SPECIFIED] + t3
            if kind == "group":
                g3 = g3 + [UNKNOWN_GROUP]
        if kind == "group" and rng.random() < 0.2:
            g3 = [rng.choice(list(GROUPS.values()))]
        if kind in ("individual", "others") and rng.random() < 0.15:
            t3 = ["group" if kind == "others" else "others"]
        tgt3 = [] if (not tgt or rng.random() < 0.3) else third_spans(rng, comment, tgt)
        third = annotation(ids[2], True, third_spans(rng, comment, off), t3, g3, tgt3)
    else:
        third = annotation(ids[2], False)
    raw = agree + [third]
    rng.shuffle(raw)
    return raw


def simulate_benign(rng: random.Random, ids: list[int], comment: str) -> list[dict[str, Any]]:
    """All three say not offensive, or one dissents and marks a word."""
    raw = [annotation(i, False) for i in ids]
    if rng.random() < 0.12:
        start, word = rng.choice(_word_offsets(comment))
        k = rng.randrange(3)
        raw[k] = annotation(ids[k], True, [(start, start + len(word))], [rng.choice(["untargeted", NOT_SPECIFIED])])
    return raw


def _word_offsets(text: str) -> list[tuple[int, str]]:
    """(start, word) for the space-separated words of `text`."""
    out, pos = [], 0
    for w in text.split(" "):
        if w:
            out.append((pos, w))
        pos += len(w) + 1
    return out


def pick_group_mention(rng: random.Random, grp: str) -> tuple[str, str, list[str]]:
    """(topic, mention, GRP names) of a group mention standing for `grp`."""
    return deal(rng, f"mention:{grp}", [(topic, mention, grps) for topic, pool in GROUP_TARGETS.items()
                                        for mention, grps in pool if grp in grps])


def pick_title(rng: random.Random, kind: str, topic: Optional[str] = None) -> tuple[str, str, str]:
    """A title fitting the kind of comment to generate (of `topic` when given)."""
    if topic is not None:
        return rng.choice([t for t in TITLES if t[1] == topic])
    if kind == "individual":
        return rng.choice([t for t in TITLES if t[1] in INDIVIDUAL_TARGETS] * 2 + TITLES)
    if kind in ("none", "untargeted"):  # every topic equally often, so each one's words get used
        return pick_title(rng, kind, rng.choice(sorted({t[1] for t in TITLES})))
    return rng.choice(TITLES)


def random_date(rng: random.Random) -> str:
    """A date between 2021-06-01 and 2022-05-31."""
    return (datetime.date(2021, 6, 1) + datetime.timedelta(days=rng.randrange(365))).isoformat()


def generate_sample(rng: random.Random) -> list[dict[str, Any]]:
    """N_RECORDS records, N_OFFENSIVE of them offensive, all comments distinct."""
    kinds = [k for k, n in N_BY_KIND.items() for _ in range(n)] + ["none"] * (N_RECORDS - N_OFFENSIVE)
    assert len(kinds) == N_RECORDS and sum(N_BY_KIND.values()) == N_OFFENSIVE
    rng.shuffle(kinds)
    _DECKS.clear()
    # Every GRP group gets its turn as the main target of group comments.
    group_turns = [g for _ in range(N_BY_KIND["group"] // len(GROUPS) + 1) for g in rng.sample(list(GROUPS), len(GROUPS))]
    seen: set[str] = set()
    records = []
    for n, kind in enumerate(kinds):
        for _attempt in range(200):
            grps: list[str] = []
            if kind == "group":
                topic, mention, grps = pick_group_mention(rng, group_turns[0])
                title, topic, source = pick_title(rng, kind, topic)
            else:
                title, topic, source = pick_title(rng, kind)
            if kind == "none":
                comment, off, tgt = neutral_comment(rng, topic), [], []
            elif kind == "untargeted":
                comment, off, tgt = assemble(untargeted_pieces(rng, topic))
            elif kind == "group":
                comment, off, tgt = assemble(targeted_pieces(rng, mention, topic, allow_modifier=True))
            elif kind == "individual":
                people = INDIVIDUAL_TARGETS.get(topic, []) + INDIVIDUAL_TARGETS["any"]
                mention = deal(rng, f"individual:{topic}", people)
                comment, off, tgt = assemble(targeted_pieces(rng, mention, topic, allow_modifier=False))
            else:
                mention = deal(rng, "others", OTHERS_TARGETS)
                comment, off, tgt = assemble(targeted_pieces(rng, mention, topic, allow_modifier=True))
            if comment not in seen:
                break
        else:
            raise RuntimeError(f"could not make a new {kind} comment")
        seen.add(comment)
        if kind == "group":
            group_turns.pop(0)
        ids = rng.sample(ANNOTATOR_IDS, 3)
        if kind == "none":
            raw = simulate_benign(rng, ids, comment)
        else:
            raw = simulate_offensive(rng, ids, comment, off, tgt, kind, grps)
        record = make_record(f"kold-sample_{n:05d}", source, random_date(rng), title, comment, raw)
        # The rule must give back exactly what was generated.
        assert record["OFF"] == (kind != "none"), record
        assert record["OFF_span"] == span_text(comment, off), record
        assert record["TGT_span"] == span_text(comment, tgt), record
        if kind != "none":
            assert record["TGT"] == kind, record
            assert record["GRP"] == (", ".join(g for g in GROUPS if g in grps) or None), record
        records.append(record)
    return records


# --------------------------------------------------------------------------------------
# Hand-written fixtures.


def at(comment: str, sub: str, nth: int = 0) -> Span:
    """End-exclusive span of the nth occurrence of `sub` in `comment`."""
    start = -1
    for _ in range(nth + 1):
        start = comment.find(sub, start + 1)
        assert start >= 0, f"{sub!r} not found {nth + 1} times in {comment!r}"
    return (start, start + len(sub))


def grp_raw(*grps: str) -> list[str]:
    """Raw target_group names for GRP names."""
    return [GROUPS[g] for g in grps]


def fixture_cases() -> list[dict[str, Any]]:
    """Hand-written cases: title, source, date, comment, raw annotations and the expected gold fields."""
    cases = []

    def case(title: str, comment: str, raw: list[dict[str, Any]], expect: dict[str, Any],
             source: str = "naver_news", date: str = "2022-03-01") -> None:
        cases.append({"title": title, "source": source, "date": date, "comment": comment,
                      "raw": raw, "expect": expect})

    # 1. The worked example of the KOLD README, re-annotated by made-up annotators:
    #    inclusive ends [57..84], [56..84], [0..84] -> gold characters 56..84 (leading space).
    c = ("남녀평등 주장할 거면 여성징병제에도 동의하라고ㅋㅋㅋ 그리고 내 말에 그냥 시비만 걸지 말고 "
         "혜택은 다 쳐받으면서 왜 차별받는다고 말하는지 말해보라고ㅋㅋㅋ")
    assert len(c) == 85
    case("페미니즘이 범죄가 되는 나라 [삶과 문화]", c, [
        annotation(401001, True, [(57, 85)], ["group"], grp_raw("gender-women")),
        annotation(401002, True, [(56, 85)], [NOT_SPECIFIED, "group"], grp_raw("others-feminist") + [UNKNOWN_GROUP]),
        annotation(401003, True, [(0, 85)], ["group"], grp_raw("others-feminist")),
    ], {"OFF": True, "TGT": "group", "GRP": "others-feminist",
        "OFF_span": " 쳐받으면서 왜 차별받는다고 말하는지 말해보라고ㅋㅋㅋ", "TGT_span": ""}, date="2022-02-16")

    # 2. Two separate offensive spans in one comment, unanimous.
    c = "저 의원은 진짜 멍청하다. 말하는 것마다 역겹다 ㅋㅋ"
    o = [at(c, "멍청하다"), at(c, "역겹다")]
    t = [at(c, "저 의원")]
    case("장관 후보자 청문회 파행", c, [annotation(a, True, o, ["individual"], tgt=t) for a in (401004, 401005, 401006)],
         {"OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "멍청하다|역겹다", "TGT_span": "저 의원"})

    # 3. Span at the very start of the comment.
    c = "미친놈 아니냐 이거 방송에서 저런 말을 하네"
    o = [at(c, "미친놈 아니냐")]
    case("예능 출연자 막말 논란", c, [
        annotation(401007, True, o, ["individual"]),
        annotation(401008, True, o, ["individual"]),
        annotation(401009, True, [at(c, "미친놈")], ["individual"]),
    ], {"OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "미친놈 아니냐", "TGT_span": ""}, source="youtube")

    # 4. Span at the very end; the third annotator also takes the particle before it.
    c = "요즘 뉴스 볼 때마다 기자들은 다 쓰레기"
    o, t = [at(c, "다 쓰레기")], [at(c, "기자들")]
    case("언론 신뢰도 조사 결과", c, [
        annotation(401010, True, o, ["group"], grp_raw("others-others"), t),
        annotation(401011, True, o, ["group"], grp_raw("others-others"), t),
        annotation(401012, True, [at(c, "은 다 쓰레기")], ["group"], grp_raw("others-others"), [at(c, "기자들은")]),
    ], {"OFF": True, "TGT": "group", "GRP": "others-others", "OFF_span": "다 쓰레기", "TGT_span": "기자들"})

    # 5. The whole comment is the span.
    c = "꺼져라 진짜"
    o = [(0, len(c))]
    case("유명 유튜버 복귀 영상", c, [annotation(a, True, o, ["untargeted"]) for a in (401013, 401014, 401015)],
         {"OFF": True, "TGT": "untargeted", "GRP": None, "OFF_span": "꺼져라 진짜", "TGT_span": ""}, source="youtube")

    # 6. 2-of-3 disagreement, majority offensive.
    c = "감독은 전술이 없냐 한심하네"
    o, t = [at(c, "전술이 없냐 한심하네")], [at(c, "감독")]
    case("대표팀 충격의 패배", c, [
        annotation(401016, True, o, ["individual"], tgt=t),
        annotation(401017, False),
        annotation(401018, True, o, ["individual"], tgt=t),
    ], {"OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "전술이 없냐 한심하네", "TGT_span": "감독"})

    # 7. 2-of-3 disagreement, majority not offensive: the lone span does not survive.
    c = "이번 정책은 좀 멍청한 결정 같네요"
    case("최저임금 인상 폭 결정", c, [
        annotation(401019, False),
        annotation(401020, True, [at(c, "멍청한 결정")], ["others"]),
        annotation(401021, False),
    ], {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""})

    # 8. Unanimous: identical labels and spans from all three.
    c = "조선족들은 한국에서 나가라"
    o, t = [at(c, "한국에서 나가라")], [at(c, "조선족들")]
    case("외국인 밀집 지역 주민 간담회", c,
         [annotation(a, True, o, ["group"], grp_raw("race-korean-chinese"), t) for a in (401022, 401023, 401024)],
         {"OFF": True, "TGT": "group", "GRP": "race-korean-chinese", "OFF_span": "한국에서 나가라", "TGT_span": "조선족들"})

    # 9. Several groups in GRP.
    c = "페미 여자들은 왜 맨날 피해자 코스프레냐 지겹다"
    o, t = [at(c, "피해자 코스프레냐 지겹다")], [at(c, "페미 여자들")]
    g = grp_raw("gender-women", "others-feminist")
    case("여성가족부 개편안 발표", c, [
        annotation(401025, True, o, ["group"], g, t),
        annotation(401026, True, o, ["group"], g, t),
        annotation(401027, True, o, ["group"], grp_raw("others-feminist"), t),
    ], {"OFF": True, "TGT": "group", "GRP": "gender-women, others-feminist",
        "OFF_span": "피해자 코스프레냐 지겹다", "TGT_span": "페미 여자들"})

    # 10. Not offensive, all raw span lists empty.
    c = "오늘 경기 진짜 재밌었어요 선수들 고생 많았습니다"
    case("프로야구 개막전 매진", c, [annotation(a, False) for a in (401028, 401029, 401030)],
         {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""})

    # 11. Third annotator says offensive but marks nothing.
    c = "저 사람 머리에 뭐가 들었는지 궁금하다 ㅋㅋ"
    o, t = [at(c, "머리에 뭐가 들었는지 궁금하다")], [at(c, "저 사람")]
    case("[시사토크] 이번 총선 판세", c, [
        annotation(401031, True, o, ["individual"], tgt=t),
        annotation(401032, True, [], ["individual"]),
        annotation(401033, True, o, ["individual"], tgt=t),
    ], {"OFF": True, "TGT": "individual", "GRP": None,
        "OFF_span": "머리에 뭐가 들었는지 궁금하다", "TGT_span": "저 사람"}, source="youtube")

    # 12. Offensive by majority, but the annotators' spans never overlap: empty OFF_span.
    c = "수준 하고는 참 대단들 하시네 이 동네 사람들"
    case("아파트값 하락세 지속", c, [
        annotation(401034, True, [at(c, "수준 하고는")], ["group"], grp_raw("others-others")),
        annotation(401035, True, [at(c, "참 대단들 하시네")], ["group"], grp_raw("others-others")),
        annotation(401036, False),
    ], {"OFF": True, "TGT": "group", "GRP": "others-others", "OFF_span": "", "TGT_span": ""})

    # 13. Untargeted profanity in the middle.
    c = "비 오는데 ㅅㅂ 우산도 없고 버스도 안 오네"
    o = [at(c, "ㅅㅂ")]
    case("내일 전국 장맛비", c, [
        annotation(401037, True, o, ["untargeted"]),
        annotation(401038, True, o, ["untargeted"]),
        annotation(401039, True, o, [NOT_SPECIFIED]),
    ], {"OFF": True, "TGT": "untargeted", "GRP": None, "OFF_span": "ㅅㅂ", "TGT_span": ""})

    # 14. "others" target (an organisation).
    c = "이 방송국은 조작 방송 그만하고 문 닫아라"
    o, t = [at(c, "조작 방송 그만하고 문 닫아라")], [at(c, "이 방송국")]
    case("예능 프로그램 조작 논란", c, [
        annotation(401040, True, o, ["others"], tgt=t),
        annotation(401041, True, o, ["others"], tgt=t),
        annotation(401042, True, [at(c, "문 닫아라")], ["individual"], tgt=[at(c, "방송국")]),
    ], {"OFF": True, "TGT": "others", "GRP": None, "OFF_span": "조작 방송 그만하고 문 닫아라", "TGT_span": "이 방송국"})

    # 15. Two separate target spans (two mentions of the group).
    c = "개독들 또 집회하네 개독들 때문에 다 피해 본다 정신 나간 것들"
    o = [at(c, "정신 나간 것들")]
    t = [at(c, "개독들"), at(c, "개독들", 1)]
    g = grp_raw("religion-christian")
    case("대형 교회 집회 강행", c, [
        annotation(401043, True, o, ["group"], g, t),
        annotation(401044, True, o, ["group"], g, t),
        annotation(401045, True, o, ["group"], g, [at(c, "개독들")]),
    ], {"OFF": True, "TGT": "group", "GRP": "religion-christian", "OFF_span": "정신 나간 것들", "TGT_span": "개독들|개독들"})

    # 16. Partly overlapping spans of two annotators: only the overlap is gold.
    c = "심판 판정 보니까 눈이 삐었나 싶다 진짜"
    case("심판 오심 논란", c, [
        annotation(401046, True, [at(c, "눈이 삐었나")], ["individual"], tgt=[at(c, "심판")]),
        annotation(401047, True, [at(c, "삐었나 싶다 진짜")], ["individual"], tgt=[at(c, "심판")]),
        annotation(401048, True, [], ["individual"], tgt=[at(c, "심판 판정")]),
    ], {"OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "삐었나", "TGT_span": "심판"})

    # 17. An emoji (one code point outside the BMP) before the span: offsets count code points.
    c = "😡😡 저 유튜버 사기꾼이네"
    o, t = [at(c, "사기꾼이네")], [at(c, "저 유튜버")]
    assert o[0][0] == 9
    case("유명 유튜버 뒷광고 사과", c, [annotation(a, True, o, ["individual"], tgt=t) for a in (401049, 401050, 401051)],
         {"OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "사기꾼이네", "TGT_span": "저 유튜버"}, source="youtube")

    # 18. Offensive span containing the target span (overlapping kinds).
    c = "난민들 다 쫓아내라 왜 받아주냐"
    t = [at(c, "난민들")]
    g = grp_raw("race-others")
    case("난민 신청자 심사 결과", c, [
        annotation(401052, True, [at(c, "난민들 다 쫓아내라")], ["group"], g, t),
        annotation(401053, True, [at(c, "난민들 다 쫓아내라")], ["group"], g, t),
        annotation(401054, True, [at(c, "다 쫓아내라")], ["group"], g, t),
    ], {"OFF": True, "TGT": "group", "GRP": "race-others", "OFF_span": "난민들 다 쫓아내라", "TGT_span": "난민들"})

    # 19. A one-character span.
    c = "이 기사 쓴 기자한테 ㅗ"
    o, t = [at(c, "ㅗ")], [at(c, "이 기사 쓴 기자")]
    case("전기차 충전소 부족 문제", c, [
        annotation(401055, True, o, ["individual"], tgt=t),
        annotation(401056, True, o, ["individual"], tgt=[at(c, "기자")]),
        annotation(401057, True, o, ["individual"], tgt=t),
    ], {"OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "ㅗ", "TGT_span": "이 기사 쓴 기자"})

    # 20. Not offensive, mentions a group respectfully.
    c = "조선족 동포분들도 같은 이웃인데 차별은 없어야죠"
    case("다문화 가정 지원 강화", c, [annotation(a, False) for a in (401058, 401059, 401060)],
         {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""})

    # 21. Not offensive although it uses "미쳤다" as praise; one annotator disagrees.
    c = "와 이 골은 진짜 미쳤다 소름"
    case("국가대표 축구팀 역전승", c, [
        annotation(401061, False),
        annotation(401062, False),
        annotation(401063, True, [at(c, "미쳤다")], ["untargeted"]),
    ], {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""}, source="youtube")

    # 22. Age group, third annotator picks a different group.
    c = "틀딱들은 투표권 좀 뺏어야 됨 ㅋㅋ"
    o, t = [at(c, "투표권 좀 뺏어야 됨")], [at(c, "틀딱들")]
    case("지하철 무임승차 연령 상향 논의", c, [
        annotation(401064, True, o, ["group"], grp_raw("others-age"), t),
        annotation(401065, True, o, ["group"], grp_raw("others-age"), t),
        annotation(401066, True, [at(c, "틀딱들은 투표권 좀 뺏어야 됨")], ["group"],
                   grp_raw("politics-conservative"), t),
    ], {"OFF": True, "TGT": "group", "GRP": "others-age", "OFF_span": "투표권 좀 뺏어야 됨", "TGT_span": "틀딱들"})

    # 23. A group counts only with two votes: the feminist and women picks have one each.
    c = "좌빨 페미들 선동에 넘어가는 애들이 불쌍하다 멍청해서"
    o, t = [at(c, "멍청해서")], [at(c, "좌빨 페미들")]
    case("페미니즘 강연 취소 논란", c, [
        annotation(401067, True, o, ["group"], grp_raw("politics-progressive", "others-feminist"), t),
        annotation(401068, True, o, ["group"], grp_raw("politics-progressive"), t),
        annotation(401069, True, o, ["group"], grp_raw("gender-women"), t),
    ], {"OFF": True, "TGT": "group", "GRP": "politics-progressive", "OFF_span": "멍청해서", "TGT_span": "좌빨 페미들"})

    # 24. Two spans whose union would bridge them, but the gap has only one vote.
    c = "한심한 인간. 다시는 방송 나오지 마라"
    o = [at(c, "한심한 인간"), at(c, "다시는 방송 나오지 마라")]
    case("인기 배우 학폭 의혹", c, [
        annotation(401070, True, o, ["individual"]),
        annotation(401071, True, [(0, len(c))], ["individual"]),
        annotation(401072, True, o, ["individual"]),
    ], {"OFF": True, "TGT": "individual", "GRP": None,
        "OFF_span": "한심한 인간|다시는 방송 나오지 마라", "TGT_span": ""})

    # 25. Muslims, span after a neutral clause with trailing laughter outside the span.
    c = "사원 짓는 건 자유라지만 무슬림들은 테러리스트 같아서 싫다 ㅋㅋㅋ"
    o, t = [at(c, "테러리스트 같아서 싫다")], [at(c, "무슬림들")]
    g = grp_raw("religion-muslim")
    case("이슬람 사원 건축 갈등", c, [
        annotation(401073, True, o, ["group"], g, t),
        annotation(401074, True, [at(c, "테러리스트 같아서 싫다 ㅋㅋㅋ")], ["group"], g, t),
        annotation(401075, True, o, [NOT_SPECIFIED, "group"], g + [UNKNOWN_GROUP], t),
    ], {"OFF": True, "TGT": "group", "GRP": "religion-muslim", "OFF_span": "테러리스트 같아서 싫다", "TGT_span": "무슬림들"})

    # 26. Not offensive, one annotator ticks offensive without marking anything.
    c = "아이돌 앨범 판매량 신기록 축하해요"
    case("아이돌 그룹 새 앨범 신기록", c, [
        annotation(401076, False),
        annotation(401077, True, [], [NOT_SPECIFIED]),
        annotation(401078, False),
    ], {"OFF": False, "TGT": None, "GRP": None, "OFF_span": "", "TGT_span": ""}, source="youtube")
    return cases


def build_fixtures() -> list[dict[str, Any]]:
    """Fixture records, each checked against its hand-written expected gold fields."""
    records = []
    for n, c in enumerate(fixture_cases()):
        record = make_record(f"kold-fixture_{n:05d}", c["source"], c["date"], c["title"], c["comment"], c["raw"])
        got = {k: record[k] for k in c["expect"]}
        assert got == c["expect"], f"fixture {n}: {got} != {c['expect']}"
        for field in ("OFF_span", "TGT_span"):
            for part in filter(None, record[field].split(SPAN_SEPARATOR)):
                assert part in record["comment"], (n, field, part)
        records.append(record)
    first = records[0]
    assert first["OFF_span"] == first["comment"][56:85] and first["OFF_span"].startswith(" ")
    return records


def build_bad() -> list[dict[str, Any]]:
    """Two malformed records: mismatched start/end lists, and an end index past the comment."""
    c1 = "이 사람 진짜 한심하다"
    bad1 = {"guid": "kold-bad_00000", "source": "naver_news", "date": "2022-01-10", "title": "국회 본회의 파행",
            "comment": c1, "OFF": True, "TGT": "individual", "GRP": None, "OFF_span": "한심하다", "TGT_span": "이 사람",
            "raw_labels": [annotation(a, True, [at(c1, "한심하다")], ["individual"], tgt=[at(c1, "이 사람")])
                           for a in (409001, 409002, 409003)]}
    bad1["raw_labels"][1]["off_start_idx"] = [0, 8]  # two starts, one end
    c2 = "멍청한 소리 좀 그만해"
    bad2 = {"guid": "kold-bad_00001", "source": "youtube", "date": "2022-01-11", "title": "[LIVE] 오늘의 주요 뉴스",
            "comment": c2, "OFF": True, "TGT": "untargeted", "GRP": None, "OFF_span": "멍청한 소리", "TGT_span": "",
            "raw_labels": [annotation(a, True, [at(c2, "멍청한 소리")], ["untargeted"]) for a in (409004, 409005, 409006)]}
    bad2["raw_labels"][2]["off_end_idx"] = [len(c2) + 5]  # inclusive end beyond the last character
    for record in (bad1, bad2):
        try:
            check_raw(record["comment"], record["raw_labels"], record["guid"])
        except AssertionError:
            continue
        raise AssertionError(f"{record['guid']} was meant to be malformed")
    return [bad1, bad2]


# --------------------------------------------------------------------------------------


def write_json(path: Path, records: list[dict[str, Any]]) -> None:
    """Pretty but compact UTF-8 JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def summary(records: list[dict[str, Any]]) -> str:
    """Counts for the README and the console."""
    off = sum(r["OFF"] for r in records)
    tgt = Counter(r["TGT"] for r in records if r["OFF"])
    grp = Counter(g for r in records if r["GRP"] for g in r["GRP"].split(", "))
    multi_grp = sum(1 for r in records if r["GRP"] and ", " in r["GRP"])
    multi_off = sum(1 for r in records if SPAN_SEPARATOR in r["OFF_span"])
    empty_off = sum(1 for r in records if r["OFF"] and not r["OFF_span"])
    disagree = sum(1 for r in records if len({a["offensiveness"] for a in r["raw_labels"]}) > 1)
    lines = [f"records: {len(records)}  offensive: {off}  not offensive: {len(records) - off}",
             f"TGT: {dict(sorted(tgt.items()))}",
             f"GRP ({len(grp)} groups, {multi_grp} multi-group records): {dict(sorted(grp.items()))}",
             f"multi-span OFF: {multi_off}  offensive without OFF_span: {empty_off}  "
             f"offensiveness disagreement: {disagree}"]
    return "\n".join(lines)


def insult_lexicon() -> list[str]:
    """Every insult expression the generator uses (the offensive spans of the sample)."""
    return INSULT_PREDICATES + RACE_PREDICATES + INSULT_MODIFIERS + PROFANITY


def check_demo(sample: list[dict[str, Any]]) -> list[str]:
    """The demo lines: new, offensive ones with a lexicon insult, benign ones without any."""
    lexicon = insult_lexicon()
    demo = [c for c, _ in DEMO_COMMENTS]
    assert len(set(demo)) == len(demo) >= 30, "demo comments must be distinct"
    assert not set(demo) & {r["comment"] for r in sample}, "a demo comment copies a sample comment"
    for comment, insult in DEMO_COMMENTS:
        assert comment == comment.strip() and "\n" not in comment, comment
        if insult is None:
            assert not [w for w in lexicon if w in comment], f"benign demo comment with an insult: {comment!r}"
        else:
            assert insult in lexicon and insult in comment, f"{insult!r} is not a lexicon insult of {comment!r}"
    for r in sample:  # benign sample comments never contain an insult expression
        assert r["OFF"] or not [w for w in lexicon if w in r["comment"]], r["comment"]
    # Benign lines recombine the sample's words: at least two thirds of their words, or of the
    # words' first two characters (the stem, roughly), occur in the sample.
    text = "\n".join(r["comment"] for r in sample)
    for comment, insult in DEMO_COMMENTS:
        unseen = [w for w in comment.split() if w not in text and w[:2] not in text]
        assert insult is not None or 3 * len(unseen) <= len(comment.split()), f"{comment!r}: new words {unseen}"
    return demo


def main() -> None:
    rng = random.Random(SEED)
    sample = generate_sample(rng)
    demo = check_demo(sample)
    fixtures = build_fixtures()
    bad = build_bad()
    write_json(SAMPLE_PATH, sample)
    COMMENTS_PATH.write_text("\n".join(demo) + "\n", encoding="utf-8")
    write_json(SMALL_PATH, fixtures)
    write_json(BAD_PATH, bad)
    n_off = sum(insult is not None for _, insult in DEMO_COMMENTS)
    print(f"{SAMPLE_PATH.relative_to(ROOT)}\n{summary(sample)}\n")
    print(f"{SMALL_PATH.relative_to(ROOT)}\n{summary(fixtures)}\n")
    print(f"{COMMENTS_PATH.relative_to(ROOT)}: {len(demo)} lines ({n_off} with an insult); "
          f"{BAD_PATH.relative_to(ROOT)}: {len(bad)} records")


if __name__ == "__main__":
    main()
